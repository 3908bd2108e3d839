import { Injectable } from '@nestjs/common';
import type { AgentRunEvent } from '@naalya/agent-tools';
import { currentManager, runUnscoped, withSchool } from '../../core/tenancy/tenant-context.js';
import { AgentRunStore } from '../runs/agent-run-store.service.js';

export type PersistOutcome =
  | { kind: 'persisted'; seq: number }
  | { kind: 'duplicate' }
  | { kind: 'unknown-run' }
  | { kind: 'foreign-thread' };

/**
 * Persists run events, each exactly once and numbered: seq is the run's last_seq + 1, taken under the run row's
 * lock, so it is gapless and monotonic per run whoever consumes; a message id seen before for the run inserts
 * nothing. The event and the run's new state (AgentRunStore) commit together, and the insert trigger NOTIFYs every
 * instance.
 */
@Injectable()
export class AgentRunEventStore {
  constructor(private readonly runs: AgentRunStore) {}

  async persist(runId: string, messageId: string, event: AgentRunEvent): Promise<PersistOutcome> {
    const tenant = await this.runs.tenantOf(runId);
    if (!tenant) return { kind: 'unknown-run' };
    // The run owner's own frame: RLS checks the event's school and owner against the run's.
    const asOwner = <T>(fn: () => Promise<T>) =>
      tenant.schoolId ? withSchool(tenant.schoolId, tenant.ownerId, fn) : runUnscoped(tenant.ownerId, fn);
    return asOwner(async () => {
      const run = await this.runs.lockForEvent(runId);
      if (!run) return { kind: 'unknown-run' } as const;
      if (run.threadId !== event.threadId) return { kind: 'foreign-thread' } as const;
      const seq = run.lastSeq + 1;
      const inserted = (await currentManager().query(
        `INSERT INTO agent_run_events (run_id, seq, school_id, owner_id, message_id, type, payload)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (run_id, message_id) DO NOTHING RETURNING seq`,
        [runId, seq, tenant.schoolId, tenant.ownerId, messageId, event.type, JSON.stringify(event)],
      )) as { seq: number }[];
      if (inserted.length === 0) return { kind: 'duplicate' } as const;
      await this.runs.applyEvent(runId, run, seq, event);
      return { kind: 'persisted', seq } as const;
    });
  }
}
