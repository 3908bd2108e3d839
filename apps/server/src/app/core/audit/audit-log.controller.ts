import { BadRequestException, Controller, Get, Header, NotFoundException, Param, Query, Res } from '@nestjs/common';
import { Action, AuditSource, Resource, type AuditApproval, type AuditLogDetail, type AuditLogRow } from '@naalya/access';
import { z } from 'zod';
import { RequirePermissions } from '../authorization/require-permissions.decorator.js';
import { parseDto } from '../http/parse-dto.js';
import { currentFrame, currentManager, currentScope } from '../tenancy/tenant-context.js';
import { decodeCursor, encodeCursor } from './audit-cursor.js';
import { toCsv } from './audit-csv.js';
import type { AuditApprovalSummary as ApprovalSummary } from './audit-log.service.js';

/** The response header carrying the next page's cursor; absent on the last page. The body stays a plain array. */
export const NEXT_CURSOR_HEADER = 'x-next-cursor';
/** An export is one bounded read inside the request's unit of work: past this, the caller exports a shorter range. */
export const MAX_EXPORT_ROWS = 10_000;

const isoInstant = z.iso.datetime({ offset: true });

/** Where a write came from. "rest" is the API's name for the stored "http"; "mcp" is a tool call through the MCP door. */
const sourceSchema = z.enum(['agent', 'rest', 'http', 'mcp']).transform((value) => (value === 'rest' ? AuditSource.HTTP : value));

const filterShape = {
  /** The person who made the change. */
  actorId: z.uuid().optional(),
  tool: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/).optional(),
  /** "POST /departments", as the rows show it. */
  route: z.string().regex(/^(GET|POST|PUT|PATCH|DELETE) \/[A-Za-z0-9/:_.-]{0,200}$/).optional(),
  source: sourceSchema.optional(),
  /** Inclusive lower bound on when it was written. */
  from: isoInstant.optional(),
  /** Exclusive upper bound. */
  to: isoInstant.optional(),
};

const rangeIsOrdered = (query: { from?: string; to?: string }) => !query.from || !query.to || Date.parse(query.from) < Date.parse(query.to);
const RANGE_ISSUE = { message: 'must be later than from', path: ['to'] };

const auditLogQuerySchema = z
  .strictObject({
    ...filterShape,
    /** The idempotency key of one tool call: did its write happen? */
    callId: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    /** Opaque: the position after the last row of the previous page, from its x-next-cursor header. */
    cursor: z.string().max(200).optional(),
    limit: z.coerce.number().int().min(1).max(200).default(100),
  })
  .refine(rangeIsOrdered, RANGE_ISSUE);

const exportQuerySchema = z.strictObject({ ...filterShape, from: isoInstant, to: isoInstant }).refine(rangeIsOrdered, RANGE_ISSUE);
const idParamSchema = z.strictObject({ id: z.uuid() });

type Filters = z.infer<typeof auditLogQuerySchema>;
type Row = AuditLogRow & { position: string };

const COLUMNS = `a.id, a.created_at AS "createdAt", a.actor_id AS "actorId", u.full_name AS "actorName", a.actor_type AS "actorType",
  a.action, a.resource_type AS "resourceType", a.resource_id AS "resourceId", a.source, a.call_id AS "callId",
  a.tool, a.route, a.run_id AS "runId", a.resource_name AS "resourceName"`;

/**
 * One school's rows matching the filters, in keyset order. school_id is always the first predicate and every filter
 * is a plain equality or range on an indexed column (migration 1764662400015), so each filter's query is an index
 * scan that stops at the page size. Row-level security applies underneath whatever this builds.
 */
export const selectPage = (schoolId: string, filters: Partial<Filters>, after: { micros: string; id: string } | null, limit: number, extra = '') => {
  const where = ['a.school_id = $1'];
  const params: unknown[] = [schoolId];
  const add = (sql: (placeholder: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (filters.actorId) add((p) => `a.actor_id = ${p}`, filters.actorId);
  if (filters.tool) add((p) => `a.tool = ${p}`, filters.tool);
  if (filters.route) add((p) => `a.route = ${p}`, filters.route);
  if (filters.source) add((p) => `a.source = ${p}`, filters.source);
  if (filters.callId) add((p) => `a.call_id = ${p}`, filters.callId);
  if (filters.from) add((p) => `a.created_at >= ${p}::timestamptz`, filters.from);
  if (filters.to) add((p) => `a.created_at < ${p}::timestamptz`, filters.to);
  if (after) {
    // Microseconds since the epoch, added as an integer count: exact, where a float seconds value would round.
    params.push(after.micros, after.id);
    where.push(`(a.created_at, a.id) < (timestamptz 'epoch' + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length}::uuid)`);
  }
  params.push(limit);
  return {
    sql: `SELECT ${COLUMNS}${extra}, (extract(epoch FROM a.created_at) * 1000000)::bigint::text AS position
            FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id
           WHERE ${where.join(' AND ')}
           ORDER BY a.created_at DESC, a.id DESC LIMIT $${params.length}`,
    params,
  };
};

/** The log belongs to one school: a platform admin names it with x-naalya-target-school, as for a write. */
const schoolOfCaller = (): string => {
  const scope = currentScope();
  if (scope.kind !== 'school') throw new BadRequestException('Pick a school first: the activity log belongs to one school.');
  return scope.schoolId;
};

/** The approval a confirmed write ran under, as its audit row kept it when the write committed. */
const approvalOf = (id: string, summary: ApprovalSummary, approvedByName: string | null): AuditApproval => ({
  id,
  approvedById: summary.approvedById,
  approvedByName,
  approvedAt: new Date(summary.approvedAt).toISOString(),
  answer: summary.answer,
  edited: summary.edits.length > 0,
  edits: summary.edits,
});

const withoutPosition = ({ position: _position, ...row }: Row): AuditLogRow => row;

/**
 * The activity log of the caller's school, newest first. Reads inside the REST unit of work, pinned to the school,
 * so row-level security keeps every other school's rows out; a platform admin picks the school with
 * `x-naalya-target-school` (unscoped, the log of every school at once is not offered). Every route needs LIST
 * AUDIT_LOG, as the list always has.
 */
@Controller('audit-log')
export class AuditLogController {
  @Get()
  @RequirePermissions(Action.LIST, Resource.AUDIT_LOG)
  async list(@Query() query: unknown, @Res({ passthrough: true }) response: { setHeader(name: string, value: string): void }): Promise<AuditLogRow[]> {
    const filters = parseDto(auditLogQuerySchema, query);
    const after = filters.cursor === undefined ? null : decodeCursor(filters.cursor);
    if (filters.cursor !== undefined && !after) throw new BadRequestException('Invalid request: cursor: not a cursor this API gave');
    // One row past the page says whether there is a next page without a count over the whole log.
    const { sql, params } = selectPage(schoolOfCaller(), filters, after, filters.limit + 1);
    const rows = (await currentManager().query(sql, params)) as Row[];
    const page = rows.slice(0, filters.limit);
    const last = page.at(-1);
    if (rows.length > filters.limit && last) response.setHeader(NEXT_CURSOR_HEADER, encodeCursor(last.position, last.id));
    return page.map(withoutPosition);
  }

  /** Declared before :id, so "export.csv" is never read as a row id. */
  @Get('export.csv')
  @RequirePermissions(Action.LIST, Resource.AUDIT_LOG)
  @Header('content-type', 'text/csv; charset=utf-8')
  @Header('content-disposition', 'attachment; filename="activity.csv"')
  async exportCsv(@Query() query: unknown): Promise<string> {
    const filters = parseDto(exportQuerySchema, query);
    const { sql, params } = selectPage(schoolOfCaller(), filters, null, MAX_EXPORT_ROWS + 1, ', a.changes');
    const rows = (await currentManager().query(sql, params)) as (Row & { changes: unknown })[];
    if (rows.length > MAX_EXPORT_ROWS) {
      throw new BadRequestException(`Invalid request: to: the range holds more than ${MAX_EXPORT_ROWS} rows; export a shorter range`);
    }
    return toCsv(rows.map((row) => ({ ...withoutPosition(row), changes: row.changes })));
  }

  @Get(':id')
  @RequirePermissions(Action.LIST, Resource.AUDIT_LOG)
  async detail(@Param() param: unknown): Promise<AuditLogDetail> {
    const { id } = parseDto(idParamSchema, param);
    // The run's thread and token usage only when the run is the caller's own: the thread is theirs to open, and
    // nobody else's conversation is pointed at from the log (row-level security on agent_runs agrees for staff; the
    // owner test also keeps a platform administrator's view to their own runs).
    const [row] = (await currentManager().query(
      `SELECT ${COLUMNS}, a.changes, a.trace_id AS "traceId", r.thread_id AS "threadId",
              CASE WHEN r.input_tokens + r.output_tokens > 0
                   THEN json_build_object('input', r.input_tokens, 'output', r.output_tokens) END AS "tokenUsage",
              a.approval_id AS "approvalId", a.approval AS "approvalSummary", approver.full_name AS "approvedByName"
         FROM audit_log a LEFT JOIN users u ON u.id = a.actor_id
         LEFT JOIN agent_runs r ON r.id = a.run_id AND r.owner_id = $3
         LEFT JOIN users approver ON approver.id = (a.approval->>'approvedById')::uuid
        WHERE a.school_id = $1 AND a.id = $2`,
      [schoolOfCaller(), id, currentFrame().actorId],
    )) as (Omit<AuditLogDetail, 'approval'> & { approvalId: string | null; approvalSummary: ApprovalSummary | null; approvedByName: string | null })[];
    // Another school's row is not found, never forbidden: its existence is not the caller's to learn.
    if (!row) throw new NotFoundException('No activity row has that id in this school.');
    const { approvalId, approvalSummary, approvedByName, ...detail } = row;
    return { ...detail, approval: approvalId && approvalSummary ? approvalOf(approvalId, approvalSummary, approvedByName) : null };
  }
}
