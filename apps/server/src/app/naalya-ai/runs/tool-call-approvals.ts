import { isApprovalAnswer } from '@naalya/agent-tools';
import type { AuditApprovalSummary } from '../../core/audit/audit-log.service.js';
import { currentTraceId } from '@naalya/telemetry';
import { serverMetrics } from '../../core/observability/server-metrics.js';
import { currentManager } from '../../core/tenancy/tenant-context.js';

/** A confirmation answered at resume, as the run stored it when the worker asked (never as the client sends it). */
export type ConfirmationAnswer = {
  schoolId: string | null;
  threadId: string;
  runId: string;
  interruptId: string;
  event: string;
  callId: string;
  argsHash: string;
  userId: string;
  answer: string;
  /** How long the approval stays usable (TOOL_APPROVAL_TTL_SECONDS). */
  ttlSeconds: number;
};

/** A run the server ended: approvals its owner gave in it stop counting at once (a cancelled call must not run later). */
export const voidApprovalsOf = async (runId: string): Promise<void> => {
  await currentManager().query(`UPDATE tool_call_approvals SET expires_at = now() WHERE run_id = $1 AND expires_at > now()`, [runId]);
};

/**
 * Records the user's answer in the caller's unit of work, so it commits together with the answered question. The answer
 * to a question asked again after an edit links to that edit (the latest of this call whose arguments it approves).
 */
export const recordConfirmationAnswer = async (answer: ConfirmationAnswer): Promise<void> => {
  await currentManager().query(
    `INSERT INTO tool_call_approvals
       (school_id, thread_id, run_id, interrupt_id, call_id, event, args_hash, user_id, approved, answer, expires_at, trace_id, edit_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11), $12,
             (SELECT id FROM tool_call_edits WHERE thread_id = $2 AND call_id = $5 AND edited_args_hash = $7 ORDER BY created_at DESC LIMIT 1))`,
    [
      answer.schoolId,
      answer.threadId,
      answer.runId,
      answer.interruptId,
      answer.callId,
      answer.event,
      answer.argsHash,
      answer.userId,
      isApprovalAnswer(answer.answer),
      answer.answer,
      answer.ttlSeconds,
      // The resume request's trace (null with tracing off): the approval row leads to the spans of the answer.
      currentTraceId() ?? null,
    ],
  );
  serverMetrics.approvals.inc({ outcome: isApprovalAnswer(answer.answer) ? 'granted' : 'denied' });
};

/** Why a call that needs confirmation has no usable approval; for the security log only. */
export type ApprovalRefusal = 'none' | 'declined' | 'other-tool' | 'other-arguments' | 'other-user' | 'expired';

/** The call as execute() knows it: the thread from the verified dispatch token, the rest from the envelope it parsed. */
export type ConfirmableCall = { threadId: string; callId: string; event: string; argsHash: string; userId: string };

/** A live approval of exactly the call, with its id and summary for the call's audit row. */
export type LiveApproval = { id: string; summary: AuditApprovalSummary };

/** The approval of exactly this call (tool, arguments, thread, the caller themselves) while it is live, or why there is none. */
export const checkApproval = async (call: ConfirmableCall): Promise<{ approval: LiveApproval } | { refusal: ApprovalRefusal }> => {
  const [approval] = (await currentManager().query(
    `SELECT id, event, args_hash, user_id, approved, expired, summary FROM tool_call_approval($1, $2)`,
    [call.threadId, call.callId],
  )) as { id: string; event: string; args_hash: string; user_id: string; approved: boolean; expired: boolean; summary: AuditApprovalSummary }[];
  if (!approval) return { refusal: 'none' };
  if (!approval.approved) return { refusal: 'declined' };
  if (approval.event !== call.event) return { refusal: 'other-tool' };
  if (approval.args_hash !== call.argsHash) return { refusal: 'other-arguments' };
  if (approval.user_id !== call.userId) return { refusal: 'other-user' };
  if (approval.expired) return { refusal: 'expired' };
  return { approval: { id: approval.id, summary: approval.summary } };
};

/** Undefined when the user approved exactly this call (tool, arguments, thread, themselves) and the approval is live. */
export const approvalRefusal = async (call: ConfirmableCall): Promise<ApprovalRefusal | undefined> => {
  const checked = await checkApproval(call);
  return 'refusal' in checked ? checked.refusal : undefined;
};
