import { Injectable, NotFoundException } from '@nestjs/common';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { withCode } from '../../core/http/error-code.js';
import { repo } from '../../core/tenancy/tenant-context.js';
import { ToolCallLedgerEntity } from './tool-call-ledger.entity.js';

export const NO_RECORDED_OUTCOME_ERROR = ERROR_SENTENCES.NO_RECORDED_OUTCOME;

export type ToolCallOutcome = { callId: string; event: string; status: 'completed'; result: unknown; recordedAt: Date };

/**
 * Reads the idempotency ledger for the caller's own calls: RLS limits it to the caller's school and the query to
 * rows whose actor is the caller, so another user's call id reads exactly like one that never completed.
 */
@Injectable()
export class ToolCallOutcomeService {
  async get(dto: { callId: string }, jwt: JwtPayload): Promise<ToolCallOutcome> {
    const entry = await repo(ToolCallLedgerEntity).findOneBy({ callId: dto.callId, actorId: jwt.sub });
    if (!entry) throw withCode('NO_RECORDED_OUTCOME', new NotFoundException(NO_RECORDED_OUTCOME_ERROR));
    const stored = entry.result as { data?: unknown };
    return { callId: entry.callId, event: entry.event, status: 'completed', result: stored.data ?? stored, recordedAt: entry.createdAt };
  }
}
