import { Injectable } from '@nestjs/common';
import { FINAL_RUN_STATUSES, type AgentRunEvent } from '@naalya/agent-tools';
import { currentManager, runUnscoped, withSchool } from '../../core/tenancy/tenant-context.js';
import { AgentRunStore, type RunForEvent } from '../runs/agent-run-store.service.js';

export type PersistOutcome =
  | { kind: 'persisted'; seq: number; threadId: string; ended: boolean }
  | { kind: 'duplicate' }
  | { kind: 'unknown-run' }
  | { kind: 'foreign-thread' }
  /** The event's dispatch epoch is not the run's, or the run is no longer running: a superseded or cancelled step's. */
  | { kind: 'fenced'; status: string; epoch: number };

/**
 * Persists run events, each exactly once and numbered: seq is the run's last_seq + 1, taken under the run row's
 * lock, so it is gapless and monotonic per run whoever writes; a message id seen before for the run inserts nothing.
 * The event and the run's new state (AgentRunStore) commit together, and the insert trigger NOTIFYs every instance.
 * A worker's event is stored only while its run is running under the epoch of the token it was published with; the
 * server's own events (a cancel, an abandoned step, an expired question) are appended in the lifecycle's unit of work.
 */
@Injectable()
export class AgentRunEventStore {
  constructor(private readonly runs: AgentRunStore) {}

  async persist(runId: string, messageId: string, event: AgentRunEvent, epoch: number): Promise<PersistOutcome> {
    const tenant = await this.runs.tenantOf(runId);
    if (!tenant) return { kind: 'unknown-run' };
    // The run owner's own frame: RLS checks the event's school and owner against the run's.
    const asOwner = <T>(fn: () => Promise<T>) =>
      tenant.schoolId ? withSchool(tenant.schoolId, tenant.ownerId, fn) : runUnscoped(tenant.ownerId, fn);
    return asOwner(async (): Promise<PersistOutcome> => {
      const run = await this.runs.lockForEvent(runId);
      if (!run) return { kind: 'unknown-run' };
      if (run.threadId !== event.threadId) return { kind: 'foreign-thread' };
      if (run.status !== 'running' || run.epoch !== epoch) return { kind: 'fenced', status: run.status, epoch: run.epoch };
      return this.insert(runId, run, messageId, event, tenant);
    });
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
    return this.insert(runId, run, `server:${run.epoch}:${run.lastSeq + 1}`, event, { schoolId: run.schoolId, ownerId: run.ownerId });
  }

  private async insert(
    runId: string,
    run: RunForEvent,
    messageId: string,
    event: AgentRunEvent,
    tenant: { schoolId: string | null; ownerId: string },
  ): Promise<PersistOutcome> {
    const seq = run.lastSeq + 1;
    const inserted = (await currentManager().query(
      `INSERT INTO agent_run_events (run_id, seq, school_id, owner_id, message_id, type, payload)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (run_id, message_id) DO NOTHING RETURNING seq`,
      [runId, seq, tenant.schoolId, tenant.ownerId, messageId, event.type, JSON.stringify(event)],
    )) as { seq: number }[];
    if (inserted.length === 0) return { kind: 'duplicate' };
    const status = await this.runs.applyEvent(runId, run, seq, event);
    return { kind: 'persisted', seq, threadId: run.threadId, ended: FINAL_RUN_STATUSES.includes(status) };
  }
}
