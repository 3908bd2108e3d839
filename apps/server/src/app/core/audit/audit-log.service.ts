import { Injectable } from '@nestjs/common';
import type { ActionAuditAction, AuditApproval, AuditSource } from '@naalya/access';
import type { JwtPayload } from '../auth/jwt-payload.js';
import { currentTraceId } from '@naalya/telemetry';
import { frameQuery } from '../tenancy/tenant-context.js';
import { auditChanges } from './audit-changes.js';

/** What an audit row keeps of the approval a confirmed agent write ran under (migration 1764662400021). */
export type AuditApprovalSummary = { approvedById: string; approvedAt: string; answer: string; edits: AuditApproval['edits'] };

export type AuditEntry = {
  action: ActionAuditAction;
  resourceType: string;
  resourceId?: string;
  source: AuditSource;
  callId?: string;
  /** The agent tool's name (agent writes) ... */
  tool?: string;
  /** ... or the REST route, "POST /departments" (REST writes). */
  route?: string;
  /** The agent run a tool write came from. */
  runId?: string;
  /** The display name read before the write, for a write that removes the row it would be read from (a delete). */
  resourceName?: string | null;
  /** The validated arguments or body; bounded and stripped of secrets here, whoever calls. */
  changes?: unknown;
  /** A confirmed agent write: the approval it ran under, and what the Activity page shows of it (kept with the row). */
  approvalId?: string;
  approval?: AuditApprovalSummary;
};

/**
 * One audit row's INSERT … RETURNING id ($1–$16), in the caller's unit of work: run alone by record(), or inside a tool
 * write's ledger statement (ToolCallLedgerService.record), so the row commits or rolls back with the change it describes.
 * Plain SQL: the row is fixed and written on every audited call, and the QueryBuilder's insert (metadata walk,
 * property-name rewriting, returning-column merge) cost more CPU than the statement itself (bench/results). The display
 * name is read in the same statement, after the write, unless the caller read it before (a delete).
 */
export const AUDIT_ROW_INSERT = `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, resource_id, source, call_id, trace_id,
                            tool, route, run_id, resource_name, changes, approval_id, approval)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, COALESCE($13, audit_resource_name($5, $6)), $14, $15, $16) RETURNING id`;

/** How many parameters AUDIT_ROW_INSERT takes: a statement that embeds it numbers its own from the next one. */
export const AUDIT_ROW_PARAMS = 16;

/**
 * The values of AUDIT_ROW_INSERT's parameters for one entry. The school comes from the (rebuilt) JWT: a platform admin's
 * write is recorded in its target school.
 */
export const auditRowValues = (jwt: JwtPayload, entry: AuditEntry): unknown[] => {
  if (!jwt.schoolId) throw new Error('An audited write needs a school.');
  const changes = auditChanges(entry.changes);
  return [
    jwt.schoolId,
    jwt.sub,
    jwt.type,
    entry.action,
    entry.resourceType,
    entry.resourceId ?? null,
    entry.source,
    entry.callId ?? null,
    // The trace of the REST request or the tool call that wrote it (null with tracing off): audit row to spans.
    currentTraceId() ?? null,
    entry.tool ?? null,
    entry.route ?? null,
    entry.runId ?? null,
    entry.resourceName ?? null,
    changes === null ? null : JSON.stringify(changes),
    entry.approvalId ?? null,
    entry.approval === undefined ? null : JSON.stringify(entry.approval),
  ];
};

@Injectable()
export class AuditLogService {
  /**
   * Writes in the caller's unit of work, so the row commits or rolls back with the change it describes.
   * The school comes from the (rebuilt) JWT: a platform admin's write is recorded in its target school.
   */
  async record(jwt: JwtPayload, entry: AuditEntry): Promise<string> {
    const [row] = await frameQuery<{ id: string }>(AUDIT_ROW_INSERT, auditRowValues(jwt, entry));
    return row.id;
  }

  /** The display name of a resource as the caller can see it now: read before a write that removes it. */
  async resourceName(resourceType: string, resourceId: string | undefined): Promise<string | null> {
    if (!resourceId) return null;
    const [row] = await frameQuery<{ name: string | null }>(`SELECT audit_resource_name($1, $2) AS name`, [resourceType, resourceId]);
    return row?.name ?? null;
  }
}
