import { ConflictException, Injectable } from '@nestjs/common';
import { ERROR_SENTENCES, toolError, type AgentToolResult } from '@naalya/agent-tools';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { withCode } from '../../core/http/error-code.js';
import { AUDIT_ROW_INSERT, AUDIT_ROW_PARAMS } from '../../core/audit/audit-log.service.js';
import { frameQuery } from '../../core/tenancy/tenant-context.js';
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

const ledgerParam = (index: number) => `$${AUDIT_ROW_PARAMS + index}`;

/**
 * The ledger row's INSERT taking the audit row's INSERT … RETURNING id (its parameters first) as a CTE, its id into the
 * stored outcome: one statement for both rows.
 */
const RECORD_WITH_AUDIT_ROW = `WITH audit AS (${AUDIT_ROW_INSERT})
         INSERT INTO tool_call_ledger (call_id, school_id, event, request_hash, actor_id, result, run_id)
         SELECT ${ledgerParam(1)}, ${ledgerParam(2)}, ${ledgerParam(3)}, ${ledgerParam(4)}, ${ledgerParam(5)}, ${ledgerParam(6)}::jsonb || jsonb_build_object('auditId', audit.id), ${ledgerParam(7)} FROM audit
         RETURNING result ->> 'auditId' AS "auditId"`;

export const requestHash = (request: { event: string; identity: unknown; scope: unknown; args: unknown }): string => canonicalHash(request);

@Injectable()
export class ToolCallLedgerService {
  /**
   * Holds this call id until the unit of work ends, then returns its stored outcome (or a refusal when the id was used
   * for another request), in one statement (claim_tool_call, migration 1764662400020): a concurrent delivery of the
   * same call waits here, then finds the first one's outcome instead of racing it on the domain's own constraints. The
   * lookup runs after the lock in a statement of its own inside the function, with a fresh snapshot, so it sees an
   * outcome committed while this delivery waited. The wait ends with the call's deadline (epoch ms): the caller gives
   * up then, so waiting on for the statement limit would only hold a connection for an answer nobody reads.
   */
  async claim(callId: string, hash: string, deadline: number, now: number = Date.now()): Promise<AgentToolResult | undefined> {
    let entry: { request_hash: string; result: unknown } | undefined;
    try {
      [entry] = await frameQuery<{ request_hash: string; result: unknown }>(`SELECT request_hash, result FROM claim_tool_call($1, $2)`, [
        callId,
        String(Math.max(MIN_CLAIM_WAIT_MS, Math.ceil(deadline - now))),
      ]);
    } catch (error) {
      if (WAIT_RAN_OUT.has((error as { code?: string }).code ?? '')) throw new CallStillRunningError(`call ${callId} is still running in another delivery`, { cause: error });
      throw error;
    }
    if (!entry) return undefined;
    return entry.request_hash === hash ? (entry.result as AgentToolResult) : toolError('CALL_ID_REUSED');
  }

  /**
   * In the call's transaction: the row and the effect commit together, and a duplicate delivery loses the race. With
   * the write's audit row, both go in one statement, the audit row's id into the stored outcome; returns that id.
   */
  async record(
    callId: string,
    event: string,
    hash: string,
    jwt: JwtPayload,
    result: AgentToolResult,
    runId: string | null = null,
    /** The write's audit row, as auditRowValues() gives its values. */
    auditRow?: unknown[],
  ): Promise<string | undefined> {
    const ledgerRow = [callId, jwt.schoolId, event, hash, jwt.sub, JSON.stringify(result), runId];
    try {
      // Plain SQL: one fixed INSERT on every write, without the QueryBuilder's per-call CPU.
      if (!auditRow) {
        await frameQuery(
          `INSERT INTO tool_call_ledger (call_id, school_id, event, request_hash, actor_id, result, run_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          ledgerRow,
        );
        return undefined;
      }
      if (auditRow.length !== AUDIT_ROW_PARAMS) throw new Error(`An audit row has ${AUDIT_ROW_PARAMS} values, not ${auditRow.length}.`);
      const [row] = await frameQuery<{ auditId: string }>(RECORD_WITH_AUDIT_ROW, [...auditRow, ...ledgerRow]);
      return row?.auditId;
    } catch (error) {
      // Only a call id taken in another school (invisible here under RLS) can still collide.
      if ((error as { code?: string }).code === '23505') throw withCode('CALL_ID_REUSED', new ConflictException(CALL_ID_REUSED_ERROR));
      throw error;
    }
  }
}
