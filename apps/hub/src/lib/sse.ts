import type { HttpErrorBody } from '@naalya/access';
import type { ConversationErrorCode } from '@naalya/agent-tools';
import { createParser } from 'eventsource-parser';

/** One server-sent event of a run: `seq` is its id, `type` its event name, `data` its parsed JSON payload. */
export type RunStreamEvent = { seq: number; type: string; data: unknown };

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The server's code for the kind of error, when it sent one: what the Hub tells kinds apart by. */
    readonly code?: ConversationErrorCode,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export type StreamOptions = {
  url: string;
  token: string;
  /** The id of the last event already seen; the server replays everything after it. */
  lastEventId?: number;
  onEvent: (event: RunStreamEvent) => void;
  signal?: AbortSignal;
  fetchImpl?: typeof fetch;
  /** Reconnects in a row that bring no new event before giving up. */
  maxReconnects?: number;
  /** Upper bound of the wait before a reconnect (the server suggests one with `retry:`). */
  maxRetryMs?: number;
  sleep?: (ms: number) => Promise<void>;
};

export type StreamOutcome = { lastEventId: number; finished: boolean };

/** The events that end a run step; after one, the server closes the stream and there is nothing to reconnect for. */
const STEP_END = new Set(['RUN_FINISHED', 'RUN_ERROR']);

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The HttpError a failed response stands for: its message and code from the error body, when it is one. */
export const httpErrorOf = async (response: Response): Promise<HttpError> => {
  let message = `Request failed (${response.status}).`;
  let code: ConversationErrorCode | undefined;
  try {
    const body = (await response.json()) as Partial<Record<keyof HttpErrorBody, unknown>>;
    if (typeof body.message === 'string') message = body.message;
    else if (Array.isArray(body.message)) message = body.message.join(' ');
    if (typeof body.code === 'string') code = body.code as ConversationErrorCode;
  } catch {
    // not JSON
  }
  return new HttpError(response.status, message, code);
};

/**
 * Follows a run's event stream with fetch (the routes take a Bearer header, which EventSource cannot send): parses
 * the SSE framing with eventsource-parser, reports each event once, and reconnects with Last-Event-ID when the
 * connection drops before the step ended. Resolves when the step ended (RUN_FINISHED or RUN_ERROR) or the server
 * closed a stream that had nothing more; rejects on an HTTP error (401, 403, 404 are not retried) or after too
 * many fruitless reconnects.
 */
export const streamRunEvents = async (options: StreamOptions): Promise<StreamOutcome> => {
  const fetchImpl = options.fetchImpl ?? fetch;
  const sleep = options.sleep ?? defaultSleep;
  const maxReconnects = options.maxReconnects ?? 5;
  const maxRetryMs = options.maxRetryMs ?? 3_000;
  let lastEventId = options.lastEventId ?? 0;
  let retryMs = 1_000;
  let fruitless = 0;
  let lastType: string | undefined;

  for (;;) {
    if (options.signal?.aborted) return { lastEventId, finished: false };
    let progressed = false;
    let dropped = false;
    try {
      const response = await fetchImpl(options.url, {
        headers: {
          accept: 'text/event-stream',
          authorization: `Bearer ${options.token}`,
          ...(lastEventId > 0 ? { 'last-event-id': String(lastEventId) } : {}),
        },
        signal: options.signal,
        cache: 'no-store',
      });
      if (!response.ok) throw await httpErrorOf(response);
      if (!response.body) throw new HttpError(response.status, 'The event stream has no body.');
      const parser = createParser({
        onEvent: (message) => {
          const seq = Number(message.id);
          // Replays after a reconnect never repeat an event: ids are the run's monotonic seq.
          if (!Number.isInteger(seq) || seq <= lastEventId) return;
          lastEventId = seq;
          progressed = true;
          lastType = message.event ?? 'message';
          let data: unknown = message.data;
          try {
            data = JSON.parse(message.data);
          } catch {
            // keep the raw text
          }
          options.onEvent({ seq, type: lastType, data });
        },
        onRetry: (ms) => {
          retryMs = ms;
        },
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.feed(value);
      }
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if (options.signal?.aborted) return { lastEventId, finished: false };
      dropped = true;
    }
    if (lastType && STEP_END.has(lastType)) return { lastEventId, finished: true };
    // A clean end without a step end and without news: the run is not running (nothing more will come).
    if (!dropped && !progressed) return { lastEventId, finished: false };
    fruitless = progressed ? 0 : fruitless + 1;
    if (fruitless > maxReconnects) throw new Error('The event stream keeps dropping. Reload the page to try again.');
    await sleep(Math.min(retryMs, maxRetryMs));
  }
};
