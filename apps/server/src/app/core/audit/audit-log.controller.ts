import { BadRequestException, Controller, Get, Query } from '@nestjs/common';
import { Action, AuditSource, Resource, type AuditLogRow } from '@naalya/access';
import { z } from 'zod';
import { RequirePermissions } from '../authorization/require-permissions.decorator.js';
import { parseDto } from '../http/parse-dto.js';
import { currentManager, currentScope } from '../tenancy/tenant-context.js';

const auditLogQuerySchema = z.strictObject({
  /** The idempotency key of one tool call: did its write happen? */
  callId: z.string().regex(/^[0-9a-f]{64}$/).optional(),
  source: z.enum([AuditSource.HTTP, AuditSource.AGENT]).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(100),
});

/**
 * The activity log of the caller's school, newest first. Reads inside the REST unit of work, pinned to the school,
 * so row-level security keeps every other school's rows out; a platform admin picks the school with
 * `x-naalya-target-school` (unscoped, the log of every school at once is not offered).
 */
@Controller('audit-log')
export class AuditLogController {
  @Get()
  @RequirePermissions(Action.LIST, Resource.AUDIT_LOG)
  async list(@Query() query: unknown): Promise<AuditLogRow[]> {
    const { callId, source, limit } = parseDto(auditLogQuerySchema, query);
    const scope = currentScope();
    if (scope.kind !== 'school') throw new BadRequestException('Pick a school first: the activity log belongs to one school.');
    return (await currentManager().query(
      `SELECT a.id, a.created_at AS "createdAt", a.actor_id AS "actorId", u.full_name AS "actorName", a.actor_type AS "actorType",
              a.action, a.resource_type AS "resourceType", a.resource_id AS "resourceId", a.source, a.call_id AS "callId"
         FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id
        WHERE a.school_id = $1 AND ($2::text IS NULL OR a.call_id = $2) AND ($3::text IS NULL OR a.source = $3)
        ORDER BY a.created_at DESC LIMIT $4`,
      [scope.schoolId, callId ?? null, source ?? null, limit],
    )) as AuditLogRow[];
  }
}
