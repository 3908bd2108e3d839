import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDepartmentTool } from '@naalya/agent-tools';
import type { AuditLogDetail, AuditLogRow } from '@naalya/access';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { createDepartmentFixture } from '../../naalya-ai/tools/fixtures/create-department.fixture.js';
import { insertDepartment, uniqueName } from '../../naalya-ai/tools/fixtures/tool-fixture.js';
import { callRest, tokenFor } from '../../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { dispatchEnvelope, personaRun } from '../../../testing/dispatch-envelope.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { TARGET_SCHOOL_HEADER } from '../http/target-school.js';
import { auditChanges, MAX_CHANGES_CHARS } from './audit-changes.js';
import { encodeCursor } from './audit-cursor.js';
import { NEXT_CURSOR_HEADER } from './audit-log.controller.js';

let testApp: TestApp;

beforeAll(async () => {
  testApp = await createTestApp();
});
afterAll(() => testApp?.close());

const school = () => testApp.demo.schools[0];
const otherSchool = () => testApp.demo.schools[1];

const get = async (persona: DemoPersona, path: string, headers: Record<string, string> = {}) => {
  const response = await fetch(`${await testApp.app.getUrl()}${path}`, { headers: { authorization: `Bearer ${tokenFor(testApp, persona)}`, ...headers } });
  const text = await response.text();
  const isJson = response.headers.get('content-type')?.includes('json');
  return { status: response.status, headers: response.headers, body: (isJson ? JSON.parse(text) : text) as unknown };
};

type Seeded = { id: string; created_at: string };

/**
 * Rows written straight into the log, as the owner, in a window of their own (a past year no real write falls in), so
 * each test knows exactly which rows its filters must return.
 */
const seedRows = async (
  schoolId: string,
  rows: { at: string; actorId?: string; tool?: string | null; route?: string | null; source?: 'agent' | 'http'; resourceName?: string; changes?: unknown }[],
): Promise<Seeded[]> => {
  const seeded: Seeded[] = [];
  for (const row of rows) {
    const source = row.source ?? (row.route ? 'http' : 'agent');
    const [inserted] = (await testApp.owner.query(
      `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, resource_id, source, tool, route, resource_name, changes, created_at)
       VALUES ($1, $2, 'staff', 'create', 'department', $3, $4, $5, $6, $7, $8, $9) RETURNING id, created_at::text`,
      [schoolId, row.actorId ?? randomUUID(), randomUUID(), source, row.tool ?? null, row.route ?? null, row.resourceName ?? null, row.changes === undefined ? null : JSON.stringify(row.changes), row.at],
    )) as Seeded[];
    seeded.push(inserted as Seeded);
  }
  return seeded;
};

/** A window of its own per test: a year in the past, one per call, so no two tests share rows. */
let nextYear = 2001;
const window = () => {
  const year = nextYear++;
  return { from: `${year}-01-01T00:00:00Z`, to: `${year + 1}-01-01T00:00:00Z`, at: (day: number, ms = 0) => new Date(Date.UTC(year, 0, day, 12, 0, 0, ms)).toISOString() };
};

const list = async (persona: DemoPersona, query: Record<string, string>, headers: Record<string, string> = {}) => {
  const answer = await get(persona, `/audit-log?${new URLSearchParams(query)}`, headers);
  return { ...answer, rows: answer.body as AuditLogRow[], next: answer.headers.get(NEXT_CURSOR_HEADER) };
};

describe('the audit row: what Activity needs, in the same insert', () => {
  it('a REST create records its route, no tool or run, the name and the validated body', async () => {
    const call = await createDepartmentFixture.allowed({ demo: testApp.demo, owner: testApp.owner });
    const rest = await callRest(testApp, call.persona, createDepartmentFixture.rest, call.args);
    expect(rest.status).toBe(201);
    const [row] = await testApp.owner.query(`SELECT tool, route, run_id, resource_name, changes, source FROM audit_log WHERE resource_id = $1`, [
      (rest.body as { id: string }).id,
    ]);
    expect(row).toEqual({ tool: null, route: 'POST /departments', run_id: null, resource_name: call.args['name'], changes: call.args, source: 'http' });
  });

  it('a REST delete still names the department it removed (read before the delete, in the same unit of work)', async () => {
    const name = uniqueName('Drama');
    const id = await insertDepartment(testApp.owner, school().id, school().campuses[1].id, name);
    const rest = await callRest(testApp, school().personas.schoolAdmin, { method: 'DELETE', path: () => `/departments/${id}`, handler: [Object, 'x'] }, {});
    expect(rest.status).toBe(200);
    const rows = await testApp.owner.query(`SELECT route, resource_name, changes FROM audit_log WHERE resource_id = $1`, [id]);
    expect(rows).toEqual([{ route: 'DELETE /departments/:departmentId', resource_name: name, changes: { departmentId: id } }]);
  });

  it('an agent write records its tool, run and validated arguments; the detail endpoint shows them with its call id', async () => {
    const admin = school().personas.schoolAdmin;
    const args = { name: uniqueName('Music') };
    const envelope = await dispatchEnvelope(admin, createDepartmentTool, args);
    const result = await invokeTool(testApp.module, createDepartmentTool, envelope);
    if ('error' in result) throw new Error(result.error);
    const detail = await get(admin, `/audit-log/${result.auditId}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({
      id: result.auditId,
      tool: 'create_department',
      route: null,
      runId: personaRun(admin.id).runId,
      callId: envelope.meta.callId,
      resourceName: args.name,
      changes: args,
      traceId: null,
      source: 'agent',
      actorId: admin.id,
      actorName: admin.fullName,
      threadId: personaRun(admin.id).threadId,
      // The run reported no tokens yet: no usage is shown rather than a made-up zero.
      tokenUsage: null,
    } satisfies Partial<AuditLogDetail>);
  });

  it("security: the detail links the run's thread and token usage for the caller's own run only, never someone else's", async () => {
    const admin = school().personas.schoolAdmin;
    const envelope = await dispatchEnvelope(admin, createDepartmentTool, { name: uniqueName('Dance') });
    const result = await invokeTool(testApp.module, createDepartmentTool, envelope);
    if ('error' in result) throw new Error(result.error);
    const { runId, threadId } = personaRun(admin.id);
    await testApp.owner.query(`UPDATE agent_runs SET input_tokens = 1200, output_tokens = 345 WHERE id = $1`, [runId]);
    const own = await get(admin, `/audit-log/${result.auditId}`);
    expect(own.body).toMatchObject({ runId, threadId, tokenUsage: { input: 1200, output: 345 } });
    // A platform administrator reads the same row in that school, and sees the run id but not the admin's thread.
    const platform = await get(testApp.demo.platformAdmin, `/audit-log/${result.auditId}`, { [TARGET_SCHOOL_HEADER]: school().id });
    expect(platform.status).toBe(200);
    expect(platform.body).toMatchObject({ runId, threadId: null, tokenUsage: null });
  });

  it('the summary of changes leaves secrets out and is bounded', () => {
    expect(auditChanges({ name: 'Arts', password: 'x', apiKey: 'k', nested: { accessToken: 't', keep: 1 } })).toEqual({ name: 'Arts', nested: { keep: 1 } });
    expect(auditChanges({ text: 'a'.repeat(600) })).toEqual({ text: `${'a'.repeat(500)}… (600 characters)` });
    const items = auditChanges({ marks: Array.from({ length: 60 }, (_, index) => index) }) as { marks: unknown[] };
    expect(items.marks).toHaveLength(51);
    expect(items.marks.at(-1)).toBe('… 10 more');
    const huge = auditChanges(Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`field${index}`, 'x'.repeat(400)])));
    expect(JSON.stringify(huge).length).toBeLessThan(MAX_CHANGES_CHARS);
    expect(huge).toMatchObject({ truncated: true, fields: expect.arrayContaining(['field0', 'field39']) });
  });
});

describe('GET /audit-log filters', () => {
  it('filters by person, tool, route, source and date range, each returning exactly its rows', async () => {
    const w = window();
    const alice = randomUUID();
    const bob = randomUUID();
    const rows = await seedRows(school().id, [
      { at: w.at(1), actorId: alice, tool: 'create_department' },
      { at: w.at(2), actorId: alice, route: 'POST /departments' },
      { at: w.at(3), actorId: bob, tool: 'record_marks' },
      { at: w.at(4), actorId: bob, route: 'DELETE /departments/:departmentId' },
      { at: w.at(5), actorId: alice, tool: 'create_department' },
    ]);
    const admin = school().personas.schoolAdmin;
    const ids = async (query: Record<string, string>) => (await list(admin, { from: w.from, to: w.to, ...query })).rows.map((row) => row.id);
    const [r1, r2, r3, r4, r5] = rows.map((row) => row.id);
    expect(await ids({})).toEqual([r5, r4, r3, r2, r1]);
    expect(await ids({ actorId: alice })).toEqual([r5, r2, r1]);
    expect(await ids({ tool: 'create_department' })).toEqual([r5, r1]);
    expect(await ids({ route: 'DELETE /departments/:departmentId' })).toEqual([r4]);
    expect(await ids({ source: 'rest' })).toEqual([r4, r2]);
    expect(await ids({ source: 'agent' })).toEqual([r5, r3, r1]);
    expect(await ids({ source: 'mcp' })).toEqual([]);
    expect(await ids({ actorId: bob, source: 'agent' })).toEqual([r3]);
    // from is inclusive, to exclusive.
    expect(await ids({ from: w.at(2), to: w.at(4) })).toEqual([r3, r2]);
  });

  it('pages by an opaque cursor with no duplicates or gaps, ties on created_at included, and stays stable under inserts', async () => {
    const w = window();
    // Three rows at each instant: the id breaks the tie, so no row is skipped or repeated at a page boundary.
    const seeded = await seedRows(school().id, Array.from({ length: 24 }, (_, index) => ({ at: w.at(1 + Math.floor(index / 3)), tool: 'create_department' })));
    const expected = [...seeded].sort((a, b) => (a.created_at === b.created_at ? (a.id < b.id ? 1 : -1) : a.created_at < b.created_at ? 1 : -1)).map((row) => row.id);
    const admin = school().personas.schoolAdmin;
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await list(admin, { from: w.from, to: w.to, limit: '5', ...(cursor ? { cursor } : {}) });
      expect(page.status).toBe(200);
      seen.push(...page.rows.map((row) => row.id));
      cursor = page.next;
      pages += 1;
      // A newer row written while the caller pages: it belongs before page one, never inside a later page.
      if (pages === 2) await seedRows(school().id, [{ at: w.at(20), tool: 'create_department' }]);
    } while (cursor);
    expect(pages).toBe(5);
    expect(seen).toEqual(expected);
  });
});

describe('GET /audit-log/export.csv', () => {
  it('exports the range with a header row, every cell quoted and formula-like cells neutralised', async () => {
    const w = window();
    const [inside] = await seedRows(school().id, [
      { at: w.at(2), tool: 'create_department', resourceName: '=HYPERLINK("http://x","click")', changes: { name: '+cmd, "quoted"' } },
    ]);
    await seedRows(school().id, [{ at: `${nextYear + 5}-06-01T00:00:00Z`, tool: 'create_department', resourceName: 'outside the range' }]);
    const csv = await get(school().personas.schoolAdmin, `/audit-log/export.csv?${new URLSearchParams({ from: w.from, to: w.to })}`);
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csv.headers.get('content-disposition')).toContain('attachment');
    const lines = (csv.body as string).trimEnd().split('\r\n');
    expect(lines[0]).toBe('createdAt,actorName,actorId,actorType,source,tool,route,action,resourceType,resourceId,resourceName,runId,callId,changes');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(`"'=HYPERLINK(""http://x"",""click"")"`);
    expect(lines[1]).toContain(`"{""name"":""+cmd, \\""quoted\\""""}"`);
    expect(lines[1]).not.toContain('outside the range');
    expect(inside).toBeDefined();
  });

  it('needs a range: from and to are required and named when missing', async () => {
    const answer = await get(school().personas.schoolAdmin, '/audit-log/export.csv');
    expect(answer.status).toBe(400);
    expect((answer.body as { message: string }).message).toMatch(/from: .*; to: /);
  });
});

describe('security: the activity log of one school only, for those allowed to read it', () => {
  it("another school's rows are never listed, detailed or exported", async () => {
    const w = window();
    const [theirs] = await seedRows(otherSchool().id, [{ at: w.at(1), tool: 'create_department', resourceName: 'Their secret department' }]);
    const [ours] = await seedRows(school().id, [{ at: w.at(2), tool: 'create_department' }]);
    const admin = school().personas.schoolAdmin;
    expect((await list(admin, { from: w.from, to: w.to })).rows.map((row) => row.id)).toEqual([ours?.id]);
    expect((await get(admin, `/audit-log/${theirs?.id}`)).status).toBe(404);
    const csv = await get(admin, `/audit-log/export.csv?${new URLSearchParams({ from: w.from, to: w.to })}`);
    expect(csv.body as string).not.toContain('Their secret department');
  });

  it('a forged cursor is refused when malformed, and one pointing into another school still reads only the own school', async () => {
    const admin = school().personas.schoolAdmin;
    for (const cursor of ['not-a-cursor', Buffer.from('1.2').toString('base64url'), Buffer.from(`99999999999999999999.${randomUUID()}`).toString('base64url'), 'a+b/c=']) {
      const answer = await list(admin, { cursor });
      expect(answer.status).toBe(400);
      expect((answer.body as { message: string }).message).toContain('cursor');
    }
    const w = window();
    const [theirs] = await seedRows(otherSchool().id, [{ at: w.at(5), tool: 'create_department' }]);
    const [ours] = await seedRows(school().id, [{ at: w.at(1), tool: 'create_department' }]);
    const micros = String(Date.parse(w.at(6)) * 1000);
    const forged = await list(admin, { from: w.from, to: w.to, cursor: encodeCursor(micros, theirs?.id as string) });
    expect(forged.status).toBe(200);
    expect(forged.rows.map((row) => row.id)).toEqual([ours?.id]);
  });

  it('a teacher without the audit permission is refused the list, a row and the export', async () => {
    const teacher = school().personas.teacher;
    const [ours] = await seedRows(school().id, [{ at: window().at(1), tool: 'create_department' }]);
    expect((await get(teacher, '/audit-log')).status).toBe(403);
    expect((await get(teacher, `/audit-log/${ours?.id}`)).status).toBe(403);
    expect((await get(teacher, '/audit-log/export.csv?from=2000-01-01T00:00:00Z&to=2001-01-01T00:00:00Z')).status).toBe(403);
  });

  it('a platform administrator reads a school only through x-naalya-target-school, and only that school', async () => {
    const w = window();
    const [ours] = await seedRows(school().id, [{ at: w.at(1), tool: 'create_department' }]);
    await seedRows(otherSchool().id, [{ at: w.at(2), tool: 'create_department' }]);
    const platform = testApp.demo.platformAdmin;
    expect((await list(platform, { from: w.from, to: w.to })).status).toBe(400);
    const scoped = await list(platform, { from: w.from, to: w.to }, { [TARGET_SCHOOL_HEADER]: school().id });
    expect(scoped.status).toBe(200);
    expect(scoped.rows.map((row) => row.id)).toEqual([ours?.id]);
  });
});

describe('strict query validation: 400 naming the field', () => {
  it.each([
    [{ actorId: 'someone' }, 'actorId'],
    [{ tool: 'Drop Table' }, 'tool'],
    [{ route: 'TRACE /x' }, 'route'],
    [{ source: 'email' }, 'source'],
    [{ from: 'yesterday' }, 'from'],
    [{ to: '2026-13-01T00:00:00Z' }, 'to'],
    [{ from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'to'],
    [{ limit: '0' }, 'limit'],
    [{ limit: '1000' }, 'limit'],
    [{ unexpected: '1' }, 'unexpected'],
  ])('%o is refused naming %s', async (query, field) => {
    const answer = await list(school().personas.schoolAdmin, query as Record<string, string>);
    expect(answer.status).toBe(400);
    expect((answer.body as { message: string }).message).toContain(field);
  });

  it('a row id that is not a uuid is refused naming id', async () => {
    const answer = await get(school().personas.schoolAdmin, '/audit-log/42');
    expect(answer.status).toBe(400);
    expect((answer.body as { message: string }).message).toContain('id');
  });
});
