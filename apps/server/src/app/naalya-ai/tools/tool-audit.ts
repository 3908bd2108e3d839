import type { ActionAuditAction, AuditSource } from '@naalya/access';
import type { AuditLogService } from '../../core/audit/audit-log.service.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';

/**
 * One audit row for a successful tool write, in the call's unit of work; nothing for `{ error }`.
 * The school comes from the rebuilt JWT (a platform admin's target school). Returns the row's id.
 */
export const auditToolWrite = async <T>(
  auditLogService: AuditLogService,
  jwt: JwtPayload,
  audit: { action: ActionAuditAction; resourceType: string; resourceId?: string; resourceName?: string | null },
  result: { data: T } | { error: string },
  call: { callId: string; tool: string; runId: string; args: unknown; source: AuditSource },
): Promise<string | undefined> => {
  if ('error' in result) return undefined;
  return auditLogService.record(jwt, {
    ...audit,
    source: call.source,
    callId: call.callId,
    tool: call.tool,
    runId: call.runId,
    // The arguments as validated (the campus pinned in a campus chat included): what the write was asked to do.
    changes: call.args,
  });
};
