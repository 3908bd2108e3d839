import { Injectable } from '@nestjs/common';
import type { AgentRunEvent } from '@naalya/agent-tools';
import { DataSource } from 'typeorm';
import { currentManager, runUnscoped, withSchool } from '../../core/tenancy/tenant-context.js';
import type { AgentRunStatus, StoredInterrupt } from '../runs/agent-run.entity.js';
import { runStateAfter } from '../runs/agent-run-state.js';

export type RunTenant = { schoolId: string | null; ownerId: string };

export type PersistOutcome =
  | { kind: 'persisted'; seq: number }
  | { kind: 'duplicate' }
  | { kind: 'unknown-run' }
  | { kind: 'foreign-thread' };

type LockedRun = {
  thread_id: string;
  status: AgentRunStatus;
  last_seq: number;
  pending_interrupts: StoredInterrupt[];
  error: string | null;
};

const TENANT_CACHE_LIMIT = 10_000;

/**
 * Persists run events, each exactly once and numbered: seq is the run's last_seq + 1, taken under the run row's
 * lock, so it is gapless and monotonic per run whoever consumes; a message id seen before for the run inserts
 * nothing. The event and the run's new status commit together, and the insert trigger NOTIFYs every instance.
 */
@Injectable()
export class AgentRunEventStore {
  // A run's school and owner never change: cached so each event costs one unit of work.
  private readonly tenants = new Map<string, RunTenant>();

  constructor(private readonly dataSource: DataSource) {}

  async persist(runId: string, messageId: string, event: AgentRunEvent): Promise<PersistOutcome> {
    const tenant = await this.tenantOf(runId);
    if (!tenant) return { kind: 'unknown-run' };
    // The run owner's own frame: RLS checks the event's school and owner against the run's.
    const asOwner = <T>(fn: () => Promise<T>) =>
      tenant.schoolId ? withSchool(tenant.schoolId, tenant.ownerId, fn) : runUnscoped(tenant.ownerId, fn);
    return asOwner(async () => {
      const manager = currentManager();
      const [run] = (await manager.query(
        `SELECT thread_id, status, last_seq, pending_interrupts, error FROM agent_runs WHERE id = $1 FOR UPDATE`,
        [runId],
      )) as LockedRun[];
      if (!run) return { kind: 'unknown-run' } as const;
      if (run.thread_id !== event.threadId) return { kind: 'foreign-thread' } as const;
      const seq = run.last_seq + 1;
      const inserted = (await manager.query(
        `INSERT INTO agent_run_events (run_id, seq, school_id, owner_id, message_id, type, payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (run_id, message_id) DO NOTHING RETURNING seq`,
        [runId, seq, tenant.schoolId, tenant.ownerId, messageId, event.type, JSON.stringify(event)],
      )) as { seq: number }[];
      if (inserted.length === 0) return { kind: 'duplicate' } as const;
      const next = runStateAfter({ status: run.status, pendingInterrupts: run.pending_interrupts, error: run.error }, event);
      await manager.query(
        `UPDATE agent_runs SET last_seq = $2, status = $3, pending_interrupts = $4, error = $5, updated_at = now() WHERE id = $1`,
        [runId, seq, next.status, JSON.stringify(next.pendingInterrupts), next.error],
      );
      return { kind: 'persisted', seq } as const;
    });
  }

  /** Through the narrow SECURITY DEFINER lookup: the ingest knows only the run id, not whose frame to open. */
  private async tenantOf(runId: string): Promise<RunTenant | null> {
    const cached = this.tenants.get(runId);
    if (cached) return cached;
    const [row] = (await this.dataSource.query(`SELECT school_id, owner_id FROM agent_run_tenant($1)`, [runId])) as {
      school_id: string | null;
      owner_id: string;
    }[];
    if (!row) return null;
    const tenant = { schoolId: row.school_id, ownerId: row.owner_id };
    if (this.tenants.size >= TENANT_CACHE_LIMIT) this.tenants.delete(this.tenants.keys().next().value as string);
    this.tenants.set(runId, tenant);
    return tenant;
  }
}
