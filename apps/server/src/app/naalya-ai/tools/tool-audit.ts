import { AuditSource, type ActionAuditAction } from '@naalya/access';
import type { AuditLogService } from '../../core/audit/audit-log.service.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';

/**
 * One audit row for a successful tool write, in the call's unit of work; nothing for `{ error }`.
 * The school comes from the rebuilt JWT (a platform admin's target school). Returns the row's id.
 */
export const auditToolWrite = async <T>(
  auditLogService: AuditLogService,
  jwt: JwtPayload,
  audit: { action: ActionAuditAction; resourceType: string; resourceId?: string },
  result: { data: T } | { error: string },
  callId: string,
): Promise<string | undefined> => {
  if ('error' in result) return undefined;
  return auditLogService.record(jwt, { ...audit, source: AuditSource.AGENT, callId });
};
