import { ConflictException, Injectable } from '@nestjs/common';
import { ERROR_SENTENCES, toolError, type AgentToolResult } from '@naalya/agent-tools';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { lockUntilCommit } from '../../core/database/advisory-lock.js';
import { withCode } from '../../core/http/error-code.js';
import { currentManager } from '../../core/tenancy/tenant-context.js';
import { canonicalHash } from './canonical-hash.js';

export const CALL_ID_REUSED_ERROR = ERROR_SENTENCES.CALL_ID_REUSED;

/**
 * A repeat of a call gave up waiting for the call's first delivery, which still holds the call id (the call's deadline,
 * or the statement time limit, bounds the wait): that one may yet commit, so the answer is "outcome unknown", never a
 * failure, and never a second execution. The worker sends the call again while its deadline allows, and a later repeat
 * finds the stored outcome.
 */
export class CallStillRunningError extends Error {
  override readonly name = 'CallStillRunningError';
}

/** statement_timeout (query_canceled) and lock_timeout (lock_not_available): the wait for the claim ran out. */
const WAIT_RAN_OUT = new Set(['57014', '55P03']);

/**
 * The least a claim waits for the call's first delivery, even at or past its deadline: enough for one that is about to
 * commit, so a late repeat of a call that did commit still gets its stored outcome rather than "outcome unknown".
 */
export const MIN_CLAIM_WAIT_MS = 100;

export const requestHash = (request: { event: string; identity: unknown; scope: unknown; args: unknown }): string => canonicalHash(request);

@Injectable()
export class ToolCallLedgerService {
  /**
   * Holds this call id until the unit of work ends: a concurrent delivery of the same call waits here,
   * then finds the first one's stored outcome instead of racing it on the domain's own constraints. The wait ends with
   * the call's deadline (epoch ms): the caller gives up then, so waiting on for the statement limit would only hold a
   * connection for an answer nobody reads.
   */
  async claim(callId: string, deadline: number, now: number = Date.now()): Promise<void> {
    try {
      await lockUntilCommit(callId, { waitMs: Math.max(MIN_CLAIM_WAIT_MS, deadline - now) });
    } catch (error) {
      if (WAIT_RAN_OUT.has((error as { code?: string }).code ?? '')) throw new CallStillRunningError(`call ${callId} is still running in another delivery`, { cause: error });
      throw error;
    }
  }

  /** The stored outcome of this call id, or a refusal when the id was used for another request. */
  async lookup(callId: string, hash: string): Promise<AgentToolResult | undefined> {
    // The two columns it needs, in the call's transaction: findOneBy built and hydrated the whole entity on every write.
    const [entry] = (await currentManager().query(`SELECT request_hash, result FROM tool_call_ledger WHERE call_id = $1`, [callId])) as {
      request_hash: string;
      result: unknown;
    }[];
    if (!entry) return undefined;
    return entry.request_hash === hash ? (entry.result as AgentToolResult) : toolError('CALL_ID_REUSED');
  }

  /** In the call's transaction: the row and the effect commit together, and a duplicate delivery loses the race. */
  async record(callId: string, event: string, hash: string, jwt: JwtPayload, result: AgentToolResult, runId: string | null = null): Promise<void> {
    try {
      // Plain SQL, like lookup(): one fixed INSERT on every write, without the QueryBuilder's per-call CPU.
      await currentManager().query(
        `INSERT INTO tool_call_ledger (call_id, school_id, event, request_hash, actor_id, result, run_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [callId, jwt.schoolId, event, hash, jwt.sub, JSON.stringify(result), runId],
      );
    } catch (error) {
      // Only a call id taken in another school (invisible here under RLS) can still collide.
      if ((error as { code?: string }).code === '23505') throw withCode('CALL_ID_REUSED', new ConflictException(CALL_ID_REUSED_ERROR));
      throw error;
    }
  }
}
