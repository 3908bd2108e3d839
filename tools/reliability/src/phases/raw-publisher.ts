import { randomBytes, randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { AgentToolResult } from '@naalya/agent-tools';
import { DIRECT_REPLY_TO, rmqNames } from '@naalya/rmq';
import amqplib, { type Channel, type ChannelModel } from 'amqplib';

/**
 * Publishes bytes the worker's client would never build (forgeries), onto the tools queue the way the worker reaches
 * it, and reads what the server answered. The worker's own client (support/caller.ts) cannot send these: it builds
 * the packet and sets user_id itself.
 */
export type RawOutcome =
  | { settled: 'answered'; reply: unknown }
  /** The broker closed the channel instead of routing the message (for example a user_id the connection may not claim). */
  | { settled: 'broker-refused'; reason: string }
  | { settled: 'no-reply' };

export type RawPublisher = {
  publish: (body: Buffer, options: { userId?: string; timeoutMs: number }) => Promise<{ correlationId: string; outcome: RawOutcome }>;
  close: () => Promise<void>;
};

/** The reply text and whether the server ran the call, from what came back on the reply-to. */
export const readReply = (outcome: RawOutcome): { text?: string; ran: boolean; result?: AgentToolResult } => {
  if (outcome.settled !== 'answered') return { ran: false };
  const reply = outcome.reply as { response?: AgentToolResult; err?: { message?: unknown } | string } | undefined;
  if (reply?.response && typeof reply.response === 'object') {
    const result = reply.response;
    return 'data' in result ? { ran: true, result } : { text: result.error, ran: false, result };
  }
  const err = reply?.err;
  return { ran: false, text: typeof err === 'string' ? err : typeof err?.message === 'string' ? err.message : JSON.stringify(reply) };
};

/** Where the worker publishes tool calls: the dedicated tools exchange when the topology has one, else the queue. */
const destinationOf = async (model: ChannelModel, toolsQueue: string): Promise<{ exchange: string; routingKey: string }> => {
  const { toolsExchange } = rmqNames(toolsQueue) as { toolsExchange?: string };
  if (!toolsExchange) return { exchange: '', routingKey: toolsQueue };
  const probe = await model.createChannel();
  probe.on('error', () => undefined);
  try {
    await probe.checkExchange(toolsExchange);
    await probe.close();
    return { exchange: toolsExchange, routingKey: toolsQueue };
  } catch {
    return { exchange: '', routingKey: toolsQueue };
  }
};

export const openRawPublisher = async (url: string, toolsQueue: string): Promise<RawPublisher> => {
  const model = await amqplib.connect(url);
  model.on('error', () => undefined);
  const destination = await destinationOf(model, toolsQueue);
  const waiting = new Map<string, (reply: unknown) => void>();
  // Direct reply-to: the replies come back on the channel that published, which must consume the pseudo-queue first.
  const channel = await model.createChannel();
  await channel.consume(
    DIRECT_REPLY_TO,
    (message) => {
      if (!message) return;
      const correlationId = String(message.properties.correlationId);
      let reply: unknown;
      try {
        reply = JSON.parse(message.content.toString('utf8'));
      } catch {
        reply = message.content.toString('utf8');
      }
      waiting.get(correlationId)?.(reply);
    },
    { noAck: true },
  );

  const answered = (correlationId: string, timeoutMs: number) =>
    new Promise<RawOutcome>((resolve) => {
      const timer = setTimeout(() => {
        waiting.delete(correlationId);
        resolve({ settled: 'no-reply' });
      }, timeoutMs);
      waiting.set(correlationId, (reply) => {
        clearTimeout(timer);
        waiting.delete(correlationId);
        resolve({ settled: 'answered', reply });
      });
    });

  /** A user_id the connection may not claim closes the channel (406): on a channel of its own, so the others live on. */
  const publishOnOwnChannel = async (body: Buffer, properties: amqplib.Options.Publish, timeoutMs: number): Promise<RawOutcome> => {
    const own: Channel = await model.createChannel();
    const closed = new Promise<RawOutcome>((resolve) => {
      own.on('error', (error: Error) => resolve({ settled: 'broker-refused', reason: error.message }));
      setTimeout(() => resolve({ settled: 'no-reply' }), timeoutMs);
    });
    const reply = new Promise<RawOutcome>((resolve) => {
      void own.consume(
        DIRECT_REPLY_TO,
        (message) => message && resolve({ settled: 'answered', reply: JSON.parse(message.content.toString('utf8')) as unknown }),
        { noAck: true },
      ).then(() => own.publish(destination.exchange, destination.routingKey, body, properties), () => undefined);
    });
    const outcome = await Promise.race([closed, reply]);
    await own.close().catch(() => undefined);
    return outcome;
  };

  return {
    publish: async (body, options) => {
      const correlationId = randomUUID();
      const properties: amqplib.Options.Publish = {
        correlationId,
        replyTo: DIRECT_REPLY_TO,
        contentType: 'application/json',
        ...(options.userId === undefined ? {} : { userId: options.userId }),
      };
      if (options.userId !== undefined && options.userId !== new URL(url).username) {
        return { correlationId, outcome: await publishOnOwnChannel(body, properties, options.timeoutMs) };
      }
      const outcome = answered(correlationId, options.timeoutMs);
      channel.publish(destination.exchange, destination.routingKey, body, properties);
      return { correlationId, outcome: await outcome };
    },
    close: async () => {
      await channel.close().catch(() => undefined);
      await model.close().catch(() => undefined);
    },
  };
};

/**
 * Takes every message off a dead-letter queue and returns their correlation ids: after a phase, the forgeries that
 * had to be dead-lettered must all be there (a refused message acked instead would be gone for good).
 */
export const drainDeadLetters = async (url: string, queue: string): Promise<Set<string>> => {
  const model = await amqplib.connect(url);
  model.on('error', () => undefined);
  const found = new Set<string>();
  try {
    const channel = await model.createChannel();
    for (let message = await channel.get(queue, { noAck: true }); message; message = await channel.get(queue, { noAck: true })) {
      found.add(String(message.properties.correlationId));
    }
  } finally {
    await model.close().catch(() => undefined);
  }
  return found;
};

/**
 * Consumes a dead-letter queue as its messages arrive, collecting their correlation ids until stopped: for a phase that
 * sends more than the queue keeps (it is bounded, its oldest dropped first), so none is dropped before it is counted.
 */
export const consumeDeadLetters = async (url: string, queue: string): Promise<{ ids: Set<string>; stop: () => Promise<void> }> => {
  const model = await amqplib.connect(url);
  model.on('error', () => undefined);
  const ids = new Set<string>();
  const channel = await model.createChannel();
  await channel.consume(queue, (message) => message && ids.add(String(message.properties.correlationId)), { noAck: true });
  return { ids, stop: () => model.close().catch(() => undefined) };
};

const run = promisify(execFile);

/**
 * A second broker user, allowed to publish where the worker publishes (same vhost, same permissions): what another
 * service with broker credentials, or a leaked password, gives an attacker. Created with rabbitmqctl for this phase
 * and deleted afterwards.
 */
export const createBrokerIntruder = async (brokerUrl: string): Promise<{ url: string; user: string; remove: () => Promise<void> }> => {
  const parsed = new URL(brokerUrl);
  const vhost = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || '/';
  const user = `rel_intruder_${randomBytes(4).toString('hex')}`;
  const password = randomBytes(12).toString('hex');
  await run('rabbitmqctl', ['add_user', user, password]);
  await run('rabbitmqctl', ['set_permissions', '-p', vhost, user, '.*', '.*', '.*']);
  parsed.username = user;
  parsed.password = password;
  return { url: parsed.toString(), user, remove: () => run('rabbitmqctl', ['delete_user', user]).then(() => undefined) };
};
