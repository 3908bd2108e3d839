// Variant (e), the ideal pipeline: raw amqplib + pg, the same delivery guarantees as (a), issuing exactly the statements
// the real server issues for list_departments (c) and create_department (d), in one transaction each, and nothing else:
// no Nest, no TypeORM, no zod, no CASL. The texts below are the ones PostgreSQL logged for (c) and (d); run.mjs
// captures both again on every run and reports whether they still match.
//
// BENCH_IDEAL_FUSED=1 (what the server issues since issue 25): a read in 4 statements (BEGIN; open_tool_call: the pin,
// the run's dispatch state (a write's lookup locking the run's row, a read's not) and the caller with their
// permissions; the departments with their members; COMMIT), a write in 6 (BEGIN; open_tool_call; claim_tool_call: the
// advisory lock and the ledger lookup; the INSERT; the audit row and the ledger row in one statement; COMMIT). Otherwise the statements before it, the 7- and 10-statement pipelines,
// kept as variants (e7) and (e10) to measure the server against.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { serveRawRpc } from '../lib/raw-rpc-server.mjs';
import pg from 'pg';

const { DATABASE_URL, DATABASE_POOL_SIZE, BENCH_DISPATCH_KEY, BENCH_IDEAL_DISPATCH_STATE, BENCH_IDEAL_IDENTITY_WITH_PERMISSIONS, BENCH_IDEAL_FUSED } =
  process.env;
const FUSED = BENCH_IDEAL_FUSED === '1';

const SQL = {
  begin: 'START TRANSACTION',
  dispatchState: 'SELECT status, owner_id, thread_id, epoch, lease_live FROM agent_run_dispatch_state($1)',
  // The server's time limits ride in the tenant's statement (transaction-local: PgBouncer's transaction pooling allows
  // neither startup parameters nor session settings); the values are its defaults, which the bench does not change.
  tenant: `SELECT set_config('app.school_id', $1, true), set_config('app.platform', $2, true), set_config('app.user_id', $3, true), set_config('statement_timeout', $4, true), set_config('idle_in_transaction_session_timeout', $5, true)`,
  // As the server's ledger claim: the wait for another delivery of the call bounded by the call's deadline.
  lock: `SELECT set_config('lock_timeout', $2, true), pg_advisory_xact_lock(hashtextextended($1, 0)), set_config('lock_timeout', '0', true)`,
  ledgerLookup: 'SELECT request_hash, result FROM tool_call_ledger WHERE call_id = $1',
  user: `SELECT "UserEntity"."id" AS "UserEntity_id", "UserEntity"."school_id" AS "UserEntity_school_id", "UserEntity"."campus_id" AS "UserEntity_campus_id", "UserEntity"."email" AS "UserEntity_email", "UserEntity"."full_name" AS "UserEntity_full_name", "UserEntity"."user_type" AS "UserEntity_user_type", "UserEntity"."is_active" AS "UserEntity_is_active", "UserEntity"."created_at" AS "UserEntity_created_at" FROM "users" "UserEntity" WHERE (("UserEntity"."id" = $1)) LIMIT 1`,
  permissions: `SELECT "permission"."id" AS "permission_id", "permission"."school_id" AS "permission_school_id", "permission"."role_id" AS "permission_role_id", "permission"."action" AS "permission_action", "permission"."resource" AS "permission_resource", "permission"."conditions" AS "permission_conditions" FROM "role_permissions" "permission" INNER JOIN "user_x_roles" "userRole" ON "userRole"."role_id" = "permission"."role_id" WHERE "userRole"."user_id" = $1`,
  // IdentityService.assertCurrentWithPermissions: the caller and their permission rows in one statement.
  userWithPermissions: `
  SELECT u.is_active AS "isActive", u.user_type AS "userType", u.school_id AS "schoolId", u.campus_id AS "campusId",
         (SELECT COALESCE(json_agg(json_build_object('action', p.action, 'resource', p.resource, 'conditions', p.conditions)), '[]'::json)
            FROM role_permissions p INNER JOIN user_x_roles ur ON ur.role_id = p.role_id
           WHERE ur.user_id = u.id) AS permissions
    FROM users u
   WHERE u.id = $1`,
  departments: `SELECT department.id, department.name, department.campus_id AS "campusId", campus.name AS "campusName"
         FROM departments department LEFT JOIN campuses campus ON campus.id = department.campus_id
        WHERE $1::uuid[] IS NULL OR department.campus_id = ANY($1::uuid[])
        ORDER BY department.name`,
  members: `SELECT member.department_id AS "departmentId", member.user_id AS "staffId", staff.full_name AS "fullName", member.is_head AS "isHead"
         FROM department_members member JOIN users staff ON staff.id = member.user_id
        WHERE member.department_id = ANY($1::uuid[])
        ORDER BY staff.full_name`,
  insertDepartment: `INSERT INTO departments (school_id, campus_id, name) VALUES ($1, $2, $3) RETURNING id, created_at AS "createdAt"`,
  // The server's own audit insert (audit-log.service.ts): the Activity columns and the display-name lookup included.
  insertAudit: `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, resource_id, source, call_id, trace_id,
                              tool, route, run_id, resource_name, changes)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, COALESCE($13, audit_resource_name($5, $6)), $14) RETURNING id`,
  insertLedger: `INSERT INTO tool_call_ledger (call_id, school_id, event, request_hash, actor_id, result, run_id) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
  // The fused statements (BENCH_IDEAL_FUSED=1).
  openToolCall: 'SELECT * FROM open_tool_call($1, $2, $3, $4, $5, $6, $7)',
  claim: 'SELECT request_hash, result FROM claim_tool_call($1, $2)',
  departmentsWithMembers: `SELECT department.id, department.name, department.campus_id AS "campusId", campus.name AS "campusName",
              COALESCE((SELECT json_agg(json_build_object('staffId', member.user_id, 'fullName', staff.full_name, 'isHead', member.is_head)
                                        ORDER BY staff.full_name)
                          FROM department_members member JOIN users staff ON staff.id = member.user_id
                         WHERE member.department_id = department.id), '[]'::json) AS members
         FROM departments department LEFT JOIN campuses campus ON campus.id = department.campus_id
        WHERE $1::uuid[] IS NULL OR department.campus_id = ANY($1::uuid[])
        ORDER BY department.name`,
};
// The audit row and the ledger row in one statement, as ToolCallLedgerService.record writes them (audit $1–$16, ledger
// $17–$23). The audit row names the approval a confirmed write ran under (migration 1764662400021; null here), which the
// 10-statement ideal, kept as the server wrote it before issue 25, does not.
SQL.auditAndLedger = `WITH audit AS (${SQL.insertAudit
  .replace('resource_name, changes)', 'resource_name, changes, approval_id, approval)')
  .replace('$14) RETURNING id', '$14, $15, $16) RETURNING id')})
         INSERT INTO tool_call_ledger (call_id, school_id, event, request_hash, actor_id, result, run_id)
         SELECT $17, $18, $19, $20, $21, $22::jsonb || jsonb_build_object('auditId', audit.id), $23 FROM audit
         RETURNING result ->> 'auditId' AS "auditId"`;
// DATABASE_STATEMENT_TIMEOUT_MS's default, and twice it for an idle transaction (transaction-timeouts.ts).
const STATEMENT_TIMEOUT_MS = '10000';
const IDLE_IN_TRANSACTION_TIMEOUT_MS = '20000';
// The SQL dialect the project reads (pg-sql-template spaces are normalised by run.mjs before comparing).
export const IDEAL_SQL = SQL;

const pool = new pg.Pool({ connectionString: DATABASE_URL, max: Number(DATABASE_POOL_SIZE) });

const isCurrent = (user, identity) =>
  user && user.UserEntity_is_active && user.UserEntity_user_type === identity.type && user.UserEntity_school_id === identity.schoolId &&
  user.UserEntity_campus_id === (identity.campusId ?? null);

/** The caller, refused unless current, and their permission rows: one statement or two, as the server does it. */
const currentPermissions = async (client, identity) => {
  if (BENCH_IDEAL_IDENTITY_WITH_PERMISSIONS === '1') {
    const { rows: [row] } = await client.query(SQL.userWithPermissions, [identity.sub]);
    const current = row && row.isActive && row.userType === identity.type && row.schoolId === identity.schoolId && row.campusId === (identity.campusId ?? null);
    return current ? row.permissions.map((p) => ({ permission_action: p.action, permission_resource: p.resource, permission_conditions: p.conditions })) : undefined;
  }
  const { rows: users } = await client.query(SQL.user, [identity.sub]);
  if (!isCurrent(users[0], identity)) return undefined;
  return (await client.query(SQL.permissions, [identity.sub])).rows;
};

const allows = (permissions, action, resource) =>
  permissions.some(
    (row) =>
      (row.permission_action === action || row.permission_action === 'manage') &&
      (row.permission_resource === resource || row.permission_resource === 'all') &&
      !row.permission_conditions,
  );

/** When the server signs dispatch tokens, the ideal checks the signature too (CPU only, no statement). */
const dispatchClaims = (token) => {
  if (!BENCH_DISPATCH_KEY || !token) return undefined;
  // v2.<kid>.<claims>.<mac>: the MAC covers everything before it. The bench's key is a plain secret (key id "default").
  const parts = token.split('.');
  const signature = parts.pop();
  const body = parts.at(-1) ?? '';
  const expected = createHmac('sha256', BENCH_DISPATCH_KEY).update(parts.join('.')).digest();
  const given = Buffer.from(signature ?? '', 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Error('bad dispatch token');
  return JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
};

// `fence`: a write's run lookup locks the run's row until it commits (a cancel waits for it); a read's does not.
const inTransaction = async ({ identity, meta }, work, fence) => {
  const claims = dispatchClaims(meta.dispatchToken);
  const client = await pool.connect();
  try {
    await client.query(SQL.begin);
    if (FUSED) {
      const { rows: [opened] } = await client.query(SQL.openToolCall, [identity.schoolId, '', identity.sub, STATEMENT_TIMEOUT_MS, IDLE_IN_TRANSACTION_TIMEOUT_MS, claims?.runId, fence]);
      if (!(opened.run_status === 'running' && opened.run_epoch === claims?.epoch && opened.run_lease_live && opened.run_owner_id === identity.sub && opened.run_thread_id === claims?.threadId)) {
        await client.query('ROLLBACK');
        return { error: 'run not in flight' };
      }
      const current = opened.caller_active && opened.caller_type === identity.type && opened.caller_school_id === identity.schoolId && opened.caller_campus_id === (identity.campusId ?? null);
      // Checked where the server checks it: after the ledger, so a write's replay still gets its stored outcome.
      const permissions = () =>
        current ? opened.caller_permissions.map((p) => ({ permission_action: p.action, permission_resource: p.resource, permission_conditions: p.conditions })) : undefined;
      const result = await work(client, claims, permissions);
      await client.query('error' in result ? 'ROLLBACK' : 'COMMIT');
      return result;
    }
    await client.query(SQL.tenant, [identity.schoolId, '', identity.sub, STATEMENT_TIMEOUT_MS, IDLE_IN_TRANSACTION_TIMEOUT_MS]);
    if (BENCH_IDEAL_DISPATCH_STATE === '1') {
      const { rows: [run] } = await client.query(SQL.dispatchState, [claims?.runId]);
      if (!(run?.status === 'running' && run.epoch === claims?.epoch && run.lease_live && run.owner_id === identity.sub && run.thread_id === claims?.threadId)) {
        await client.query('ROLLBACK');
        return { error: 'run not in flight' };
      }
    }
    const result = await work(client, claims, () => currentPermissions(client, identity));
    await client.query('error' in result ? 'ROLLBACK' : 'COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
};

const listDepartments = (envelope) => {
  return inTransaction(envelope, async (client, _claims, caller) => {
    const permissions = await caller();
    if (!permissions) return { error: 'identity refused' };
    if (!allows(permissions, 'list', 'Department')) return { error: 'denied' };
    if (FUSED) {
      const { rows: data } = await client.query(SQL.departmentsWithMembers, [null]);
      return { data, scopeContext: 'Your access covers the whole school.' };
    }
    const { rows: departments } = await client.query(SQL.departments, [null]);
    if (departments.length === 0) return { data: [], scopeContext: 'Your access covers the whole school.' };
    const { rows: members } = await client.query(SQL.members, [departments.map((d) => d.id)]);
    const data = departments.map((d) => ({
      ...d,
      members: members.filter((m) => m.departmentId === d.id).map(({ staffId, fullName, isHead }) => ({ staffId, fullName, isHead })),
    }));
    return { data, scopeContext: 'Your access covers the whole school.' };
  }, false);
};

const createDepartment = (envelope) => {
  const { identity, args, meta, scope } = envelope;
  const hash = createHash('sha256').update(JSON.stringify({ event: 'create.department', identity, scope, args })).digest('hex');
  return inTransaction(envelope, async (client, claims, caller) => {
    const wait = String(Math.max(100, Math.ceil(meta.deadline - Date.now())));
    const { rows: stored } = FUSED
      ? await client.query(SQL.claim, [meta.callId, wait])
      : (await client.query(SQL.lock, [meta.callId, wait]), await client.query(SQL.ledgerLookup, [meta.callId]));
    if (stored[0]) return stored[0].result;
    const permissions = await caller();
    if (!permissions) return { error: 'identity refused' };
    if (!allows(permissions, 'create', 'Department')) return { error: 'denied' };
    const name = args.name.trim();
    const { rows: [department] } = await client.query(SQL.insertDepartment, [identity.schoolId, null, name]);
    const data = { id: department.id, schoolId: identity.schoolId, campusId: null, name, createdAt: department.createdAt };
    const auditRow = [
      identity.schoolId, identity.sub, identity.type, 'create', 'department', department.id, 'agent', meta.callId, null,
      'create_department', null, claims?.runId ?? null, null, JSON.stringify(args),
    ];
    if (FUSED) {
      const result = { data, scopeContext: 'Your access covers the whole school.' };
      const ledgerRow = [meta.callId, identity.schoolId, 'create.department', hash, identity.sub, JSON.stringify(result), claims?.runId ?? null];
      // As the server does since the audit posture names the department from its result: resource_name is given, so the
      // statement skips audit_resource_name's lookup by id (the 10-statement ideal keeps the lookup, as it was).
      const { rows: [row] } = await client.query(SQL.auditAndLedger, [...auditRow.with(12, name), null, null, ...ledgerRow]);
      return { ...result, auditId: row.auditId };
    }
    const { rows: [audit] } = await client.query(SQL.insertAudit, auditRow);
    const result = { data, scopeContext: 'Your access covers the whole school.', auditId: audit.id };
    await client.query(SQL.insertLedger, [meta.callId, identity.schoolId, 'create.department', hash, identity.sub, JSON.stringify(result), claims?.runId ?? null]);
    return result;
  }, true);
};

const HANDLERS = { 'list.departments': listDepartments, 'create.department': createDepartment };

await serveRawRpc({
  connectionName: 'naalya-bench-ideal',
  handle: (packet) => {
    const handler = HANDLERS[packet.pattern];
    if (!handler) return { id: packet.id, err: { status: 'error', message: 'no handler' }, isDisposed: true };
    return handler(packet.data).then(
      (response) => ({ id: packet.id, response, isDisposed: true }),
      (error) => ({ id: packet.id, response: { error: String(error?.message ?? error) }, isDisposed: true }),
    );
  },
  onClose: () => pool.end().catch(() => undefined),
});
