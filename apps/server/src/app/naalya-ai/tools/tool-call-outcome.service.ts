import { Injectable, NotFoundException } from '@nestjs/common';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { repo } from '../../core/tenancy/tenant-context.js';
import { ToolCallLedgerEntity } from './tool-call-ledger.entity.js';

export const NO_RECORDED_OUTCOME_ERROR =
  'No completed change with this call id was found for you. If it timed out moments ago it may still be running, so check once more shortly; otherwise it was not saved.';

export type ToolCallOutcome = { callId: string; event: string; status: 'completed'; result: unknown; recordedAt: Date };

/**
 * Reads the idempotency ledger for the caller's own calls: RLS limits it to the caller's school and the query to
 * rows whose actor is the caller, so another user's call id reads exactly like one that never completed.
 */
@Injectable()
export class ToolCallOutcomeService {
  async get(dto: { callId: string }, jwt: JwtPayload): Promise<ToolCallOutcome> {
    const entry = await repo(ToolCallLedgerEntity).findOneBy({ callId: dto.callId, actorId: jwt.sub });
    if (!entry) throw new NotFoundException(NO_RECORDED_OUTCOME_ERROR);
    const stored = entry.result as { data?: unknown };
    return { callId: entry.callId, event: entry.event, status: 'completed', result: stored.data ?? stored, recordedAt: entry.createdAt };
  }
}
