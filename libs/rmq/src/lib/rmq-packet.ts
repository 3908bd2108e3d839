import { isUtf8 } from 'node:buffer';

/** The body Nest's ClientRMQ publishes: `id` is present for a call and absent for an event. */
export type RmqIncomingPacket = {
  pattern: string | number | Record<string, unknown>;
  data: unknown;
  id?: string;
};

/** What ClientRMQ expects back: any other key makes it treat the reply as a foreign payload. */
export type RmqReplyPacket = { id?: string; response?: unknown; err?: unknown; isDisposed: true };

/** The shape Nest's RPC exception filter gives errors, so clients see one kind of error whoever refused the call. */
export type RmqErrorBody = { status: 'error'; message: string };

export const rmqError = (message: string): RmqErrorBody => ({ status: 'error', message });

export type RmqPacketParse = { ok: true; packet: RmqIncomingPacket } | { ok: false; reason: string };

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Parses a delivery body without throwing. Unlike the stock server, a body that is not a Nest packet is refused here
 * rather than routed as a string pattern, so a malformed message can never reach a handler.
 */
export const parseRmqPacket = (content: Buffer, maxMessageBytes: number): RmqPacketParse => {
  if (content.length > maxMessageBytes) {
    return { ok: false, reason: `Message of ${content.length} bytes exceeds the limit of ${maxMessageBytes} bytes.` };
  }
  // toString would replace bad bytes silently: a handler must never see a message other than the one sent.
  if (!isUtf8(content)) return { ok: false, reason: 'Message body is not valid UTF-8.' };
  let body: unknown;
  try {
    body = JSON.parse(content.toString('utf8'));
  } catch {
    return { ok: false, reason: 'Message body is not JSON.' };
  }
  if (!isPlainObject(body)) return { ok: false, reason: 'Message body is not an object.' };
  const { pattern, data, id } = body;
  const patternIsValid = typeof pattern === 'string' || (typeof pattern === 'number' && Number.isFinite(pattern)) || isPlainObject(pattern);
  if (!patternIsValid) return { ok: false, reason: 'Message has no valid pattern.' };
  if (id !== undefined && typeof id !== 'string') return { ok: false, reason: 'Message id is not a string.' };
  return { ok: true, packet: { pattern, data, id } };
};
