import { Injectable } from '@nestjs/common';
import type { ActionAuditAction, AuditSource } from '@naalya/access';
import type { JwtPayload } from '../auth/jwt-payload.js';
import { currentTraceId } from '@naalya/telemetry';
import { currentManager } from '../tenancy/tenant-context.js';

export type AuditEntry = {
  action: ActionAuditAction;
  resourceType: string;
  resourceId?: string;
  source: AuditSource;
  callId?: string;
};

@Injectable()
export class AuditLogService {
  /**
   * Writes in the caller's unit of work, so the row commits or rolls back with the change it describes.
   * The school comes from the (rebuilt) JWT: a platform admin's write is recorded in its target school.
   */
  async record(jwt: JwtPayload, entry: AuditEntry): Promise<string> {
    if (!jwt.schoolId) throw new Error('An audited write needs a school.');
    // Plain SQL: the row is fixed and written on every audited call, and the QueryBuilder's insert (metadata walk,
    // property-name rewriting, returning-column merge) cost more CPU than the statement itself (bench/results).
    const [row] = (await currentManager().query(
      `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, resource_id, source, call_id, trace_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id`,
      // The trace of the REST request or the tool call that wrote it (null with tracing off): audit row to spans.
      [jwt.schoolId, jwt.sub, jwt.type, entry.action, entry.resourceType, entry.resourceId ?? null, entry.source, entry.callId ?? null, currentTraceId() ?? null],
    )) as { id: string }[];
    return (row as { id: string }).id;
  }
}
