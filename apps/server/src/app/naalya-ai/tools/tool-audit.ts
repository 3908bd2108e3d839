import type { ActionAuditAction, AuditSource } from '@naalya/access';
import type { AuditEntry } from '../../core/audit/audit-log.service.js';
import type { LiveApproval } from '../runs/tool-call-approvals.js';

/**
 * The audit row of a successful tool write: what the posture says was changed, and which call of which run changed it.
 * Written by the ledger's statement in the call's unit of work (ToolCallLedgerService.record).
 */
export const toolAuditEntry = (
  audit: { action: ActionAuditAction; resourceType: string; resourceId?: string; resourceName?: string | null },
  call: { callId: string; tool: string; runId: string; args: unknown; source: AuditSource; approval?: LiveApproval },
): AuditEntry => {
  // Field by field, not spread: an object copied generically was a measurable share of a write's CPU.
  const entry: AuditEntry = {
    action: audit.action,
    resourceType: audit.resourceType,
    resourceId: audit.resourceId,
    resourceName: audit.resourceName,
    source: call.source,
    callId: call.callId,
    tool: call.tool,
    runId: call.runId,
    // The arguments as validated (the campus pinned in a campus chat included): what the write was asked to do.
    changes: call.args,
  };
  // A confirmed write links to the approval it ran under, and keeps what the Activity page shows of it.
  if (call.approval) {
    entry.approvalId = call.approval.id;
    entry.approval = call.approval.summary;
  }
  return entry;
};
