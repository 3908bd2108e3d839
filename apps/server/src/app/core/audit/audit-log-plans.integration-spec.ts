import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenFor } from '../../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { currentManager, withSchool } from '../tenancy/tenant-context.js';
import { selectPage } from './audit-log.controller.js';

/**
 * The Activity page against a school with 100,000 audit rows: every filter's query, exactly as GET /audit-log builds
 * it and run as the app role under row-level security, must be an index scan on audit_log (a sequential scan would
 * read the whole log on every page). The time to the first page over HTTP is reported, not asserted: it depends on
 * the machine.
 */
const ROWS = 100_000;
const TOOLS = ['create_department', 'delete_department', 'record_marks', 'record_attendance', 'create_lesson_plan', 'approve_lesson_plan'];
const ROUTES = ['POST /departments', 'DELETE /departments/:departmentId', 'POST /gradebook/marks', 'POST /classes/:classId/attendance'];

let testApp: TestApp;
let actorId: string;

beforeAll(async () => {
  testApp = await createTestApp();
  const school = testApp.demo.schools[0];
  actorId = school.personas.teacher.id;
  const started = performance.now();
  // One statement: 100,000 rows over about a year, two thirds agent writes (a tool each) and one third REST (a
  // route each), by 50 people of whom the teacher is one; the other school gets a tenth as many.
  await testApp.owner.query(
    `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, resource_id, source, tool, route, resource_name, changes, created_at)
     SELECT $1, CASE WHEN n % 50 = 0 THEN $2::uuid ELSE md5((n % 50)::text)::uuid END, 'staff', 'create', 'department', gen_random_uuid()::text,
            CASE WHEN n % 3 = 0 THEN 'http' ELSE 'agent' END,
            CASE WHEN n % 3 = 0 THEN NULL ELSE ($3::text[])[1 + n % 6] END,
            CASE WHEN n % 3 = 0 THEN ($4::text[])[1 + n % 4] ELSE NULL END,
            'Department ' || n, jsonb_build_object('name', 'Department ' || n),
            now() - (n * interval '5 minutes')
       FROM generate_series(1, $5::int) AS n`,
    [school.id, actorId, TOOLS, ROUTES, ROWS],
  );
  await testApp.owner.query(
    `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, source, tool, created_at)
     SELECT $1, gen_random_uuid(), 'staff', 'create', 'department', 'agent', 'create_department', now() - (n * interval '7 minutes')
       FROM generate_series(1, $2::int) AS n`,
    [testApp.demo.schools[1].id, ROWS / 10],
  );
  await testApp.owner.query(`ANALYZE audit_log`);
  console.log(`seeded ${ROWS} audit rows in ${Math.round(performance.now() - started)} ms`);
}, 120_000);
afterAll(() => testApp?.close());

const month = () => ({ from: new Date(Date.now() - 60 * 86_400_000).toISOString(), to: new Date(Date.now() - 30 * 86_400_000).toISOString() });

const FILTERS: [string, () => Record<string, string>][] = [
  ['no filter', () => ({})],
  ['person', () => ({ actorId })],
  ['tool', () => ({ tool: 'record_marks' })],
  ['route', () => ({ route: 'POST /gradebook/marks' })],
  ['source', () => ({ source: 'rest' })],
  ['date range', month],
  ['person and date range', () => ({ actorId, ...month() })],
];

type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] };
const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

describe('GET /audit-log on 100,000 rows', () => {
  it.each(FILTERS)('the %s query reads audit_log through an index', async (_name, query) => {
    const school = testApp.demo.schools[0];
    const filters = { ...query(), source: query()['source'] === 'rest' ? 'http' : query()['source'] } as Record<string, string | undefined>;
    const { sql, params } = selectPage(school.id, filters, null, 101);
    const [{ 'QUERY PLAN': [plan] }] = (await withSchool(school.id, school.personas.schoolAdmin.id, () =>
      currentManager().query(`EXPLAIN (FORMAT JSON) ${sql}`, params),
    )) as { 'QUERY PLAN': { Plan: PlanNode }[] }[];
    const onAuditLog = nodes((plan as { Plan: PlanNode }).Plan).filter((node) => node['Relation Name'] === 'audit_log');
    expect(onAuditLog.length).toBeGreaterThan(0);
    for (const node of onAuditLog) {
      expect(node['Node Type']).not.toBe('Seq Scan');
      expect(node['Index Name']).toMatch(/^ix_audit_log_/);
    }

    const url = `${await testApp.app.getUrl()}/audit-log?${new URLSearchParams({ ...query(), limit: '100' })}`;
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${tokenFor(testApp, school.personas.schoolAdmin)}` } });
    const rows = (await response.json()) as unknown[];
    const elapsed = performance.now() - started;
    expect(response.status).toBe(200);
    expect(rows.length).toBeGreaterThan(0);
    console.log(`first page (${rows.length} rows), ${_name}: ${elapsed.toFixed(1)} ms; index ${onAuditLog.map((node) => node['Index Name']).join(', ')}`);
  });

  it('a later page (keyset cursor) reads audit_log through an index too, and never by OFFSET', async () => {
    const school = testApp.demo.schools[0];
    const after = { micros: String((Date.now() - 200 * 86_400_000) * 1000), id: 'ffffffff-ffff-4fff-8fff-ffffffffffff' };
    const { sql, params } = selectPage(school.id, { actorId }, after, 101);
    expect(sql).not.toMatch(/OFFSET/i);
    const [{ 'QUERY PLAN': [plan] }] = (await withSchool(school.id, school.personas.schoolAdmin.id, () =>
      currentManager().query(`EXPLAIN (FORMAT JSON) ${sql}`, params),
    )) as { 'QUERY PLAN': { Plan: PlanNode }[] }[];
    const onAuditLog = nodes((plan as { Plan: PlanNode }).Plan).filter((node) => node['Relation Name'] === 'audit_log');
    expect(onAuditLog.map((node) => node['Index Name'])).toEqual(['ix_audit_log_school_actor']);
  });

  it('a CSV export of a month answers within its bound', async () => {
    const school = testApp.demo.schools[0];
    const started = performance.now();
    const response = await fetch(`${await testApp.app.getUrl()}/audit-log/export.csv?${new URLSearchParams(month())}`, {
      headers: { authorization: `Bearer ${tokenFor(testApp, school.personas.schoolAdmin)}` },
    });
    const lines = (await response.text()).trimEnd().split('\r\n');
    expect(response.status).toBe(200);
    // 30 days at one row every 5 minutes: 8,640 rows, under the export's 10,000.
    expect(lines.length).toBe(8_640 + 1);
    console.log(`CSV export of 30 days (${lines.length - 1} rows): ${(performance.now() - started).toFixed(1)} ms`);
  });
});
