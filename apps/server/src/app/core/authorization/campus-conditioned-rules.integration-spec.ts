import { listCampusesTool, listSubjectsTool, updateSchoolBrandingTool } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { tokenFor } from '../../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import type { DemoPersona } from '../../seed/demo-seed.js';

/**
 * Rules limited to the caller's campus (`{ campusId: '${user.campusId}' }`) on campuses, subjects and branding narrow
 * what they allow, over REST and over the tool hop alike: `ability.can(action, 'Type')` passes on any rule, so the
 * service itself must apply the condition.
 */

let testApp: TestApp;
let school: TestApp['demo']['schools'][0];
/** On the school's first campus, holding only the campus-limited rules below. */
let clerk: DemoPersona;
const ONLY_OTHER_CAMPUS = 'Astronomy (second campus only)';
const UNTAUGHT = 'Latin (not taught anywhere)';

const owner = <R>(sql: string, parameters: unknown[] = []) => testApp.owner.query(sql, parameters) as Promise<R[]>;

beforeAll(async () => {
  testApp = await createTestApp();
  school = testApp.demo.schools[0];
  clerk = school.personas.registrar;
  expect(clerk.campusId).toBe(school.campuses[0].id);
  // The registrar's role replaced by one whose every rule is limited to their campus.
  const [{ id: roleId }] = await owner<{ id: string }>(`INSERT INTO roles (school_id, name) VALUES ($1, 'Campus clerk') RETURNING id`, [school.id]);
  for (const [action, resource] of [['list', 'Campus'], ['list', 'Subject'], ['update', 'Branding']]) {
    await owner(`INSERT INTO role_permissions (school_id, role_id, action, resource, conditions) VALUES ($1, $2, $3, $4, $5)`, [
      school.id,
      roleId,
      action,
      resource,
      { campusId: '${user.campusId}' },
    ]);
  }
  await owner(`DELETE FROM user_x_roles WHERE user_id = $1`, [clerk.id]);
  await owner(`INSERT INTO user_x_roles (school_id, user_id, role_id) VALUES ($1, $2, $3)`, [school.id, clerk.id, roleId]);
  // A subject taught only on the second campus, and one taught nowhere: neither is on the clerk's campus.
  const otherClass = school.teaching.classes.find((stream) => stream.campusId === school.campuses[1].id);
  const [{ id: astronomy }] = await owner<{ id: string }>(`INSERT INTO subjects (school_id, name, code) VALUES ($1, $2, 'AST') RETURNING id`, [school.id, ONLY_OTHER_CAMPUS]);
  await owner(`INSERT INTO subjects (school_id, name, code) VALUES ($1, $2, 'LAT')`, [school.id, UNTAUGHT]);
  await owner(`INSERT INTO teaching_assignments (school_id, teacher_id, subject_id, class_id) VALUES ($1, $2, $3, $4)`, [
    school.id,
    school.personas.teacher.id,
    astronomy,
    otherClass?.id,
  ]);
});
afterAll(() => testApp?.close());

const rest = async (persona: DemoPersona, method: 'GET' | 'PATCH', path: string, body?: unknown) => {
  const response = await fetch(`${await testApp.app.getUrl()}${path}`, {
    method,
    headers: { authorization: `Bearer ${tokenFor(testApp, persona)}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as unknown };
};
const names = (rows: unknown) => (rows as { name: string }[]).map((row) => row.name);
const subjectsOnCampus = async (campusId: string) =>
  (
    await owner<{ name: string }>(
      `SELECT DISTINCT s.name FROM subjects s JOIN teaching_assignments t ON t.subject_id = s.id JOIN classes c ON c.id = t.class_id
        WHERE s.school_id = $1 AND c.campus_id = $2 ORDER BY s.name`,
      [school.id, campusId],
    )
  ).map((row) => row.name);
const allSubjects = async () => (await owner<{ name: string }>(`SELECT name FROM subjects WHERE school_id = $1 ORDER BY name`, [school.id])).map((row) => row.name);
const brandingAudits = async () => Number((await owner<{ count: string }>(`SELECT count(*) FROM audit_log WHERE school_id = $1 AND resource_type = 'branding'`, [school.id]))[0].count);

describe('LIST CAMPUS limited to the caller campus', () => {
  it("lists only the caller's own campus, never the school's other one (REST and tool)", async () => {
    const listed = await rest(clerk, 'GET', '/campuses');
    expect(listed).toEqual({ status: 200, body: [{ id: school.campuses[0].id, name: expect.any(String) }] });
    const viaTool = await invokeTool(testApp.module, listCampusesTool, await dispatchEnvelope(clerk, listCampusesTool, {}));
    expect(viaTool).toMatchObject({ data: [{ id: school.campuses[0].id }] });
    expect((viaTool as { data: unknown[] }).data).toHaveLength(1);
  });

  it('an unconditioned rule still lists every campus (school administrator; campus administrator with an unlimited LIST CAMPUS)', async () => {
    for (const persona of [school.personas.schoolAdmin, school.personas.campusAdmin]) {
      const listed = await rest(persona, 'GET', '/campuses');
      expect((listed.body as { id: string }[]).map((campus) => campus.id).sort()).toEqual(school.campuses.map((campus) => campus.id).sort());
    }
  });
});

describe('LIST SUBJECT limited to the caller campus', () => {
  it("lists only subjects taught on the caller's campus: not one taught only elsewhere, nor one taught nowhere (REST and tool)", async () => {
    const expected = await subjectsOnCampus(school.campuses[0].id);
    expect(expected.length).toBeGreaterThan(0);
    const listed = await rest(clerk, 'GET', '/subjects');
    expect(listed.status).toBe(200);
    expect(names(listed.body).sort()).toEqual([...expected].sort());
    expect(names(listed.body)).not.toContain(ONLY_OTHER_CAMPUS);
    expect(names(listed.body)).not.toContain(UNTAUGHT);
    const viaTool = (await invokeTool(testApp.module, listSubjectsTool, await dispatchEnvelope(clerk, listSubjectsTool, {}))) as { data: unknown };
    expect(names(viaTool.data).sort()).toEqual([...expected].sort());
  });

  it('a school-wide rule lists every subject of the school', async () => {
    const listed = await rest(school.personas.teacher, 'GET', '/subjects');
    expect(names(listed.body).sort()).toEqual((await allSubjects()).sort());
    expect(names(listed.body)).toEqual(expect.arrayContaining([ONLY_OTHER_CAMPUS, UNTAUGHT]));
  });
});

describe('UPDATE BRANDING limited to the caller campus', () => {
  it("refuses the school's branding (it is the whole school's), changing and auditing nothing (REST and tool)", async () => {
    const before = await rest(clerk, 'GET', '/branding');
    const audits = await brandingAudits();
    expect(await rest(clerk, 'PATCH', '/branding', { motto: 'Campus rule' })).toEqual({
      status: 403,
      body: expect.objectContaining({ message: 'This belongs to the whole school, and your permission covers only some campuses.', code: 'PERMISSION_DENIED' }),
    });
    const viaTool = await invokeTool(testApp.module, updateSchoolBrandingTool, await dispatchEnvelope(clerk, updateSchoolBrandingTool, { motto: 'Campus rule' }));
    expect(viaTool).toMatchObject({ code: 'PERMISSION_DENIED' });
    expect(await rest(clerk, 'GET', '/branding')).toEqual(before);
    expect(await brandingAudits()).toBe(audits);
  });

  it('a school-wide rule updates it, audited once', async () => {
    const audits = await brandingAudits();
    expect(await rest(school.personas.schoolAdmin, 'PATCH', '/branding', { motto: 'Whole school' })).toMatchObject({ status: 200, body: { motto: 'Whole school' } });
    expect(await brandingAudits()).toBe(audits + 1);
  });
});

describe('a campus rule whose condition the service cannot apply', () => {
  it('fails closed: a LIST CAMPUS rule on another field lists nothing and answers 403', async () => {
    const persona = school.personas.classTeacher;
    const [{ id: roleId }] = await owner<{ id: string }>(`INSERT INTO roles (school_id, name) VALUES ($1, 'Odd rule') RETURNING id`, [school.id]);
    await owner(`INSERT INTO role_permissions (school_id, role_id, action, resource, conditions) VALUES ($1, $2, 'list', 'Campus', $3)`, [
      school.id,
      roleId,
      { name: 'Kisasi' },
    ]);
    await owner(`DELETE FROM user_x_roles WHERE user_id = $1`, [persona.id]);
    await owner(`INSERT INTO user_x_roles (school_id, user_id, role_id) VALUES ($1, $2, $3)`, [school.id, persona.id, roleId]);
    expect((await rest(persona, 'GET', '/campuses')).status).toBe(403);
  });
});
