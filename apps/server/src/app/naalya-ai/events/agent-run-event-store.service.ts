import { Injectable } from '@nestjs/common';
import { FINAL_RUN_STATUSES, type AgentRunEvent, type RunUsage } from '@naalya/agent-tools';
import { withoutNul } from '../../core/database/jsonb-safe.js';
import { currentManager, runUnscoped, withSchool } from '../../core/tenancy/tenant-context.js';
import { serverMetrics } from '../../core/observability/server-metrics.js';
import { runStateAfter, type RunState } from '../runs/agent-run-state.js';
import { AgentRunStore, type RunForEvent } from '../runs/agent-run-store.service.js';

/** One message of a run's events as the worker published it: a RunEventBatch under its AMQP message id and epoch. */
export type RunEventMessage = { messageId: string; events: readonly AgentRunEvent[]; epoch: number };

/** What became of one message of a persist() call. */
export type MessageOutcome =
  | { kind: 'persisted'; lastSeq: number }
  | { kind: 'duplicate' }
  | { kind: 'foreign-thread' }
  /** The message's dispatch epoch is not the run's, or the run is no longer running: a superseded or cancelled step's. */
  | { kind: 'fenced'; status: string; epoch: number };

export type PersistOutcome =
  | { kind: 'unknown-run' }
  /** One outcome per message, in order; `ended` when the run reached a final status in this unit of work. */
  | { kind: 'stored'; threadId: string; ended: boolean; messages: MessageOutcome[] };

/** The row id of the event at `index` in a message: a redelivered message finds its own rows and stores nothing. */
export const eventRowId = (messageId: string, index: number): string => `${messageId}:${index}`;

type Accepted = { messageId: string; events: AgentRunEvent[] };

/** The locked run's state, which its events advance (runStateAfter). */
const stateOf = (run: RunForEvent): RunState => ({ status: run.status, pendingInterrupts: run.pendingInterrupts, error: run.error, errorCode: null });

/**
 * Persists run events, each exactly once and numbered: seq continues the run's last_seq, taken under the run row's
 * lock, so it is gapless and monotonic per run whoever writes. One unit of work stores any number of messages of one
 * run: the run is locked once, their rows go in one INSERT, the run's new state (AgentRunStore) in one UPDATE, and the
 * insert trigger NOTIFYs once. A message is stored whole or not at all, so a message whose first row exists was stored
 * before (a redelivery) and stores nothing. A worker's message is stored only while its run is running under the epoch
 * of the token it was published with (checked message by message, so one that ends the run fences the ones after it);
 * the server's own events (a cancel, an abandoned step, an expired question) are appended in the lifecycle's unit of
 * work. A pause's questions are stamped with the instant they expire, the run's expires_at.
 */
/**
 * How long each event took from the worker that made it to being stored here. The worker stamps `timestamp` with its
 * clock; a value in the future (skew) counts as 0 rather than as a negative lag.
 */
const observeEventLag = (events: readonly AgentRunEvent[]): void => {
  const now = Date.now();
  for (const event of events) {
    if (typeof event.timestamp === 'number') serverMetrics.eventLag.observe(Math.max(0, now - event.timestamp) / 1000);
  }
};

@Injectable()
export class AgentRunEventStore {
  constructor(private readonly runs: AgentRunStore) {}

  async persist(runId: string, received: readonly RunEventMessage[]): Promise<PersistOutcome> {
    // Before anything reads them: a NUL a model wrote would otherwise fail the insert (jsonb, text) and the run's state.
    const messages = received.map((message) => ({ ...message, messageId: withoutNul(message.messageId), events: withoutNul(message.events) }));
    const tenant = await this.runs.tenantOf(runId);
    if (!tenant) return { kind: 'unknown-run' };
    // The run owner's own frame: RLS checks the events' school and owner against the run's.
    const asOwner = <T>(fn: () => Promise<T>) =>
      tenant.schoolId ? withSchool(tenant.schoolId, tenant.ownerId, fn) : runUnscoped(tenant.ownerId, fn);
    return asOwner(async (): Promise<PersistOutcome> => {
      const run = await this.runs.lockForEvent(runId);
      if (!run) return { kind: 'unknown-run' };
      const seen = await this.storedMessages(runId, messages);
      let state = stateOf(run);
      const accepted: Accepted[] = [];
      const outcomes: MessageOutcome[] = [];
      let lastSeq = run.lastSeq;
      for (const message of messages) {
        if (message.events.some((event) => event.threadId !== run.threadId)) outcomes.push({ kind: 'foreign-thread' });
        else if (seen.has(message.messageId)) outcomes.push({ kind: 'duplicate' });
        else if (this.isFenced(state.status, run.epoch, message.epoch)) outcomes.push({ kind: 'fenced', status: state.status, epoch: run.epoch });
        else {
          seen.add(message.messageId);
          accepted.push({ messageId: message.messageId, events: [...message.events] });
          observeEventLag(message.events);
          for (const event of message.events) state = runStateAfter(state, event);
          lastSeq += message.events.length;
          outcomes.push({ kind: 'persisted', lastSeq });
        }
      }
      if (accepted.length > 0) await this.insert(runId, run, accepted, state);
      return { kind: 'stored', threadId: run.threadId, ended: accepted.length > 0 && FINAL_RUN_STATUSES.includes(state.status), messages: outcomes };
    });
  }

  /**
   * Whether a worker's message of `epoch` is refused: only the current step of a running run writes. (A seam of its
   * own so the reliability battery's weakened server can take the fence away and show that its checks catch it.)
   */
  isFenced(status: string, runEpoch: number, epoch: number): boolean {
    return status !== 'running' || runEpoch !== epoch;
  }

  /**
   * A server-written event, in the caller's unit of work as the run's owner: the run's row lock is taken (again) here,
   * and the run's school and owner are read with it, on the unit of work's connection. (Not tenantOf: its lookup takes
   * a second connection from the pool while this one holds the run's lock, and when the pool is taken by requests
   * waiting for that lock, as concurrent interrupts or tool calls racing a cancel are, neither can go on until the
   * statement timeout.)
   */
  async appendServerEvent(runId: string, event: AgentRunEvent): Promise<PersistOutcome> {
    const run = await this.runs.lockForEvent(runId);
    if (!run) return { kind: 'unknown-run' };
    const stamped = { ...event, timestamp: event.timestamp ?? Date.now() };
    const state = runStateAfter(stateOf(run), stamped);
    await this.insert(runId, run, [{ messageId: `server:${run.epoch}:${run.lastSeq + 1}`, events: [stamped] }], state);
    const lastSeq = run.lastSeq + 1;
    return { kind: 'stored', threadId: run.threadId, ended: FINAL_RUN_STATUSES.includes(state.status), messages: [{ kind: 'persisted', lastSeq }] };
  }

  /** The messages among these already stored for the run (by their first row). */
  private async storedMessages(runId: string, messages: readonly RunEventMessage[]): Promise<Set<string>> {
    const rows = (await currentManager().query(`SELECT message_id FROM agent_run_events WHERE run_id = $1 AND message_id = ANY($2::text[])`, [
      runId,
      messages.map((message) => eventRowId(message.messageId, 0)),
    ])) as { message_id: string }[];
    const stored = new Set(rows.map((row) => row.message_id));
    return new Set(messages.filter((message) => stored.has(eventRowId(message.messageId, 0))).map((message) => message.messageId));
  }

  /** The accepted messages' rows in one statement, numbered from the run's last_seq, then the run's state once. */
  private async insert(runId: string, run: RunForEvent, accepted: readonly Accepted[], next: RunState): Promise<void> {
    // A run that has just paused: its questions carry the instant they stop waiting, the same as the run's expires_at.
    const questionsExpireAt = next.status === 'interrupted' && run.status !== 'interrupted' ? await this.runs.questionsExpireAt() : null;
    const seqs: number[] = [];
    const messageIds: string[] = [];
    const types: string[] = [];
    const payloads: string[] = [];
    let seq = run.lastSeq;
    for (const message of accepted) {
      message.events.forEach((event, index) => {
        seqs.push((seq += 1));
        messageIds.push(eventRowId(message.messageId, index));
        types.push(event.type);
        const stored = withUsage(event, run.usage);
        payloads.push(JSON.stringify(questionsExpireAt ? withExpiry(stored, questionsExpireAt) : stored));
      });
    }
    await currentManager().query(
      `INSERT INTO agent_run_events (run_id, seq, school_id, owner_id, message_id, type, payload)
       SELECT $1, e.seq, $2, $3, e.message_id, e.type, e.payload
         FROM unnest($4::int[], $5::text[], $6::text[], $7::jsonb[]) AS e (seq, message_id, type, payload)`,
      [runId, run.schoolId, run.ownerId, seqs, messageIds, types, payloads],
    );
    await this.runs.applyState(runId, seq, next, questionsExpireAt);
    if (next.status !== run.status) serverMetrics.runStatuses.inc({ status: next.status });
  }
}

/**
 * A RUN_FINISHED with the run's tokens as the server counted them (whatever the worker may have put there), beside the
 * writes a cancel names. The usage reports of a step come before the events the model's replies caused, so the count
 * read under the run's lock is the step's whole.
 */
const withUsage = (event: AgentRunEvent, usage: RunUsage): AgentRunEvent =>
  event.type === 'RUN_FINISHED' ? { ...event, metadata: { ...event.metadata, usage } } : event;

/** A pause's interrupts with the server's expiry (whatever the worker may have put there). */
const withExpiry = (event: AgentRunEvent, at: Date): AgentRunEvent =>
  event.type === 'RUN_FINISHED' && event.outcome.type === 'interrupt'
    ? { ...event, outcome: { ...event.outcome, interrupts: event.outcome.interrupts.map((interrupt) => ({ ...interrupt, expiresAt: at.toISOString() })) } }
    : event;
