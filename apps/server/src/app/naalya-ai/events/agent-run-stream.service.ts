import type { ServerResponse } from 'node:http';
import { BadRequestException, HttpException, HttpStatus, Inject, Injectable, Logger } from '@nestjs/common';
import { ERROR_SENTENCES, toRunStreamEvent, type AgentRunEvent, type AgentRunStatus } from '@naalya/agent-tools';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { IdentityService } from '../../core/auth/identity.service.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { withCode } from '../../core/http/error-code.js';
import { currentManager } from '../../core/tenancy/tenant-context.js';
import { AgentRunStore } from '../runs/agent-run-store.service.js';
import { asCaller } from '../threads/agent-caller.guard.js';
import { AgentRunNotifier } from './agent-run-notifier.service.js';

export const LAST_EVENT_ID_ERROR = ERROR_SENTENCES.INVALID_LAST_EVENT_ID;

const BATCH = 200;
/** A comment line keeps proxies from closing an idle stream, and doubles as a safety re-read of the table. */
const HEARTBEAT_MS = 15_000;

export const eventStreamLimit = () =>
  withCode('EVENT_STREAM_LIMIT', new HttpException(ERROR_SENTENCES.EVENT_STREAM_LIMIT, HttpStatus.TOO_MANY_REQUESTS));

export type StoredRunEvent = { seq: number; type: string; payload: AgentRunEvent };

/**
 * One server-sent event: `id` is the event's seq, so a reconnecting client's Last-Event-ID resumes right after it; the
 * data is the event in AG-UI's own shape (toRunStreamEvent), so an AG-UI client reads it without dropping anything.
 */
export const formatServerSentEvent = (event: StoredRunEvent): string =>
  `id: ${event.seq}\nevent: ${event.type}\ndata: ${JSON.stringify(toRunStreamEvent(event.payload))}\n\n`;

export const parseLastEventId = (value: string | string[] | undefined): number => {
  if (value === undefined || value === '') return 0;
  const text = Array.isArray(value) ? value[value.length - 1] : value;
  if (!/^\d{1,9}$/.test(text ?? '')) throw withCode('INVALID_LAST_EVENT_ID', new BadRequestException(LAST_EVENT_ID_ERROR));
  return Number(text);
};

/**
 * Streams a run's events as server-sent events: first those already stored (after Last-Event-ID), then live ones
 * as this instance's LISTEN connection reports them, until the run stops running (RUN_FINISHED or RUN_ERROR was
 * sent and nothing is left to read); then the stream ends. Holds no transaction while it waits: every read is its
 * own short unit of work as the caller, under RLS.
 */
@Injectable()
export class AgentRunStreamService {
  private readonly logger = new Logger(AgentRunStreamService.name);
  /**
   * Open streams per user, counted in this process (AGENT_EVENT_STREAMS_PER_USER): what a stream holds (its socket,
   * its LISTEN subscription, a heartbeat timer) is this process's, and a count in PostgreSQL would outlive a process
   * killed with streams open. Behind N replicas a user can so hold up to N times the limit, each replica bounded.
   */
  private readonly openStreams = new Map<string, number>();

  constructor(
    private readonly identityService: IdentityService,
    private readonly runs: AgentRunStore,
    private readonly notifier: AgentRunNotifier,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  async stream(
    caller: JwtPayload,
    ids: { threadId: string; runId: string },
    lastEventId: string | string[] | undefined,
    response: ServerResponse,
  ): Promise<void> {
    const lastSeq = parseLastEventId(lastEventId);
    // Thrown from here (before any byte is written) these reach the client as ordinary JSON errors: 404, 403.
    await asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      await this.runs.ownedRun(ids.threadId, ids.runId, caller);
    });

    // Counted synchronously from the check on, so concurrent opens cannot both take the last slot.
    const open = this.openStreams.get(caller.sub) ?? 0;
    if (open >= this.config.AGENT_EVENT_STREAMS_PER_USER) throw eventStreamLimit();
    this.openStreams.set(caller.sub, open + 1);
    try {
      await this.serve(caller, ids, lastSeq, response);
    } finally {
      const left = (this.openStreams.get(caller.sub) ?? 1) - 1;
      if (left > 0) this.openStreams.set(caller.sub, left);
      else this.openStreams.delete(caller.sub);
    }
  }

  private async serve(caller: JwtPayload, ids: { threadId: string; runId: string }, afterSeq: number, response: ServerResponse): Promise<void> {
    let lastSeq = afterSeq;
    let isDirty = true;
    let wake: (() => void) | undefined;
    const poke = () => {
      isDirty = true;
      wake?.();
    };
    // Subscribed before the first read: an event stored in between is read either way, and never twice (seq).
    const unsubscribe = await this.notifier.subscribe(ids.runId, (seq) => {
      if (seq === null || seq > lastSeq) poke();
    });
    const closed = new AbortController();
    const onClose = () => {
      closed.abort();
      wake?.();
    };
    const shutdown = this.notifier.shutdownSignal;
    // The response's close, not the request's: a GET's request stream closes as soon as it has been read.
    response.on('close', onClose);
    shutdown.addEventListener('abort', onClose);
    const heartbeat = setInterval(() => {
      if (!response.writableEnded) response.write(': keep-alive\n\n');
      poke();
    }, HEARTBEAT_MS);
    try {
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      response.write('retry: 3000\n\n');
      while (!closed.signal.aborted && !shutdown.aborted) {
        if (!isDirty) {
          await new Promise<void>((resolve) => (wake = resolve));
          wake = undefined;
          continue;
        }
        isDirty = false;
        const { status, events } = await asCaller(caller, () => this.read(ids.runId, lastSeq));
        if (events.length > 0) {
          // One write per read, not per event: a streamed reply is hundreds of small events. Each event still carries
          // its own id, and a client's Last-Event-ID is the last event it received whole, so a resume stays exact.
          await this.write(response, events.map(formatServerSentEvent).join(''), closed.signal);
          lastSeq = events[events.length - 1].seq;
        }
        // The status was read before the events: a run that was no longer running then has all its events of this
        // step in the batch (the ingest stores RUN_FINISHED or RUN_ERROR and the new status in one transaction).
        // A queued run's stream ends at once, empty: its summary (GET /agent/threads/:id) says when it has started.
        if (status !== 'running' && events.length < BATCH) break;
        // Otherwise read again after anything new; an empty read of a running run waits for the next notification.
        if (events.length > 0) isDirty = true;
      }
    } catch (error) {
      this.logger.warn(`Run ${ids.runId}: the event stream stopped: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      clearInterval(heartbeat);
      unsubscribe();
      response.off('close', onClose);
      shutdown.removeEventListener('abort', onClose);
      if (!response.writableEnded) response.end();
    }
  }

  /** Status first, then events: each statement has its own snapshot, and this order never ends a stream early. */
  private async read(runId: string, afterSeq: number): Promise<{ status: AgentRunStatus | null; events: StoredRunEvent[] }> {
    const status = await this.runs.statusOf(runId);
    const events = (await currentManager().query(
      `SELECT seq, type, payload FROM agent_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [runId, afterSeq, BATCH],
    )) as StoredRunEvent[];
    return { status, events };
  }

  /** Respects backpressure: waits for the socket to drain, or for the client to go. */
  private write(response: ServerResponse, chunk: string, closed: AbortSignal): Promise<void> {
    if (response.write(chunk)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        response.off('drain', done);
        closed.removeEventListener('abort', done);
        resolve();
      };
      response.on('drain', done);
      closed.addEventListener('abort', done);
    });
  }
}
