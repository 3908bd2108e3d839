import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { AgentToolResult } from '@naalya/agent-tools';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { repo } from '../../core/tenancy/tenant-context.js';
import { ToolCallLedgerEntity } from './tool-call-ledger.entity.js';

/** Thrown when another delivery of the same call committed first; the caller re-reads the stored outcome. */
export class LedgerRaceError extends Error {}

export const CALL_ID_REUSED_ERROR =
  'This call id was already used for a different request, so it was not run. Do not retry this call.';

/** JSON with sorted keys, so the same request always hashes the same. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
      .map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
};

export const requestHash = (request: { event: string; identity: unknown; scope: unknown; args: unknown }): string =>
  createHash('sha256').update(canonical(request)).digest('hex');

@Injectable()
export class ToolCallLedgerService {
  /** The stored outcome of this call id, or a refusal when the id was used for another request. */
  async lookup(callId: string, hash: string): Promise<AgentToolResult | undefined> {
    const entry = await repo(ToolCallLedgerEntity).findOneBy({ callId });
    if (!entry) return undefined;
    return entry.requestHash === hash ? (entry.result as AgentToolResult) : { error: CALL_ID_REUSED_ERROR };
  }

  /** In the call's transaction: the row and the effect commit together, and a duplicate delivery loses the race. */
  async record(callId: string, event: string, hash: string, jwt: JwtPayload, result: AgentToolResult): Promise<void> {
    try {
      await repo(ToolCallLedgerEntity).insert({
        callId,
        event,
        requestHash: hash,
        actorId: jwt.sub,
        schoolId: jwt.schoolId as string,
        result: result as object,
      });
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw new LedgerRaceError('call id already recorded', { cause: error });
      throw error;
    }
  }
}
