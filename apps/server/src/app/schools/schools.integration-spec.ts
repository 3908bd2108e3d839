import { HTTP_ERROR_SENTENCES } from '@naalya/access';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { restRequest } from '../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../testing/test-app.js';
import { PLATFORM_SCHOOL_LIST_ERROR } from './schools.service.js';

/**
 * The schools a platform administrator picks from, and each school's time zone, on real PostgreSQL: who may list and
 * pick, where a write in a picked school lands (and its audit row), and what an unknown zone gets.
 */

let testApp: TestApp;
let schoolA: TestApp['demo']['schools'][0];
let schoolB: TestApp['demo']['schools'][1];

beforeAll(async () => {
  testApp = await createTestApp();
  [schoolA, schoolB] = testApp.demo.schools;
});
afterAll(() => testApp?.close());
beforeEach(async () => {
  await testApp.owner.query(`UPDATE schools SET time_zone = 'Africa/Kampala'`);
  await testApp.owner.query(`DELETE FROM audit_log WHERE resource_type = 'school'`);
});

const zones = async () =>
  Object.fromEntries(((await testApp.owner.query(`SELECT id, time_zone FROM schools`)) as { id: string; time_zone: string }[]).map((row) => [row.id, row.time_zone]));
const schoolAuditRows = (schoolId: string) =>
  testApp.owner.query(
    `SELECT actor_id, actor_type, action, resource_id, resource_name, route, source, changes FROM audit_log WHERE school_id = $1 AND resource_type = 'school'`,
    [schoolId],
  ) as Promise<Record<string, unknown>[]>;

describe('the school list (GET /schools)', () => {
  it('gives a platform administrator every school by name with its time zone', async () => {
    const listed = await restRequest(testApp, testApp.demo.platformAdmin, 'GET', '/schools');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual(
      [schoolA, schoolB].map((school) => ({ id: school.id, name: school.name, timeZone: 'Africa/Kampala' })).sort((a, b) => a.name.localeCompare(b.name)),
    );
  });

  it('refuses a school user the list of schools, and refuses them picking a school (the target school header)', async () => {
    const admin = schoolA.personas.schoolAdmin;
    expect(await restRequest(testApp, admin, 'GET', '/schools')).toMatchObject({ status: 403, body: { message: PLATFORM_SCHOOL_LIST_ERROR } });
    expect((await restRequest(testApp, admin, 'GET', '/schools', { targetSchoolId: schoolB.id })).status).toBe(403);
    const picked = await restRequest(testApp, admin, 'PATCH', '/school', { body: { timeZone: 'Europe/London' }, targetSchoolId: schoolB.id });
    expect(picked.status).toBe(403);
    expect(await zones()).toEqual({ [schoolA.id]: 'Africa/Kampala', [schoolB.id]: 'Africa/Kampala' });
    expect([...(await schoolAuditRows(schoolA.id)), ...(await schoolAuditRows(schoolB.id))]).toEqual([]);
  });
});

describe("a school's time zone", () => {
  it('is in /auth/me for staff, and null for a platform administrator (whose school comes with the list)', async () => {
    await testApp.owner.query(`UPDATE schools SET time_zone = 'Europe/London' WHERE id = $1`, [schoolB.id]);
    expect((await restRequest(testApp, schoolB.personas.teacher, 'GET', '/auth/me')).body).toMatchObject({ schoolName: schoolB.name, schoolTimeZone: 'Europe/London' });
    expect((await restRequest(testApp, schoolA.personas.teacher, 'GET', '/auth/me')).body).toMatchObject({ schoolTimeZone: 'Africa/Kampala' });
    expect((await restRequest(testApp, testApp.demo.platformAdmin, 'GET', '/auth/me')).body).toMatchObject({ schoolId: null, schoolTimeZone: null });
  });

  it('is changed by a school administrator in their own school, with its audit row there', async () => {
    const admin = schoolA.personas.schoolAdmin;
    const changed = await restRequest(testApp, admin, 'PATCH', '/school', { body: { timeZone: 'Europe/London' } });
    expect(changed).toEqual({ status: 200, body: { id: schoolA.id, name: schoolA.name, timeZone: 'Europe/London' } });
    expect(await zones()).toEqual({ [schoolA.id]: 'Europe/London', [schoolB.id]: 'Africa/Kampala' });
    expect(await schoolAuditRows(schoolA.id)).toEqual([
      {
        actor_id: admin.id,
        actor_type: admin.type,
        action: 'update',
        resource_id: schoolA.id,
        resource_name: schoolA.name,
        route: 'PATCH /school',
        source: 'http',
        changes: { timeZone: 'Europe/London' },
      },
    ]);
    expect(await schoolAuditRows(schoolB.id)).toEqual([]);
  });

  it('cannot be changed by a teacher (403, nothing written)', async () => {
    const refused = await restRequest(testApp, schoolA.personas.teacher, 'PATCH', '/school', { body: { timeZone: 'Europe/London' } });
    expect(refused.status).toBe(403);
    expect(await zones()).toEqual({ [schoolA.id]: 'Africa/Kampala', [schoolB.id]: 'Africa/Kampala' });
    expect(await schoolAuditRows(schoolA.id)).toEqual([]);
  });

  it('refuses an unknown zone with a sentence naming it, and writes nothing', async () => {
    for (const timeZone of ['Mars/Olympus_Mons', 'EAT', 'africa/kampala']) {
      const refused = await restRequest(testApp, schoolA.personas.schoolAdmin, 'PATCH', '/school', { body: { timeZone } });
      expect(refused).toEqual({
        status: 400,
        body: expect.objectContaining({
          message: `Invalid request: timeZone: "${timeZone}" is not an IANA time zone name; give one such as "Africa/Kampala" or "Europe/London".`,
        }),
      });
    }
    const malformed = await restRequest(testApp, schoolA.personas.schoolAdmin, 'PATCH', '/school', { body: { timeZone: 'UTC', name: 'Renamed' } });
    expect(malformed).toMatchObject({ status: 400, body: { message: expect.stringMatching(/^Invalid request: .*name/) } });
    expect(await zones()).toEqual({ [schoolA.id]: 'Africa/Kampala', [schoolB.id]: 'Africa/Kampala' });
    expect(await schoolAuditRows(schoolA.id)).toEqual([]);
  });
});

describe('a platform administrator acting in a picked school', () => {
  it('writes in the picked school only, with the audit row in that school and none in the other', async () => {
    const platform = testApp.demo.platformAdmin;
    const changed = await restRequest(testApp, platform, 'PATCH', '/school', { body: { timeZone: 'UTC' }, targetSchoolId: schoolB.id });
    expect(changed).toEqual({ status: 200, body: { id: schoolB.id, name: schoolB.name, timeZone: 'UTC' } });
    expect(await zones()).toEqual({ [schoolA.id]: 'Africa/Kampala', [schoolB.id]: 'UTC' });
    expect(await schoolAuditRows(schoolB.id)).toEqual([expect.objectContaining({ actor_id: platform.id, actor_type: platform.type, resource_id: schoolB.id, resource_name: schoolB.name })]);
    expect(await schoolAuditRows(schoolA.id)).toEqual([]);
  });

  it('is refused a write with no school picked (PLATFORM_WRITE_NEEDS_SCHOOL), and nothing is written', async () => {
    const refused = await restRequest(testApp, testApp.demo.platformAdmin, 'PATCH', '/school', { body: { timeZone: 'UTC' } });
    expect(refused).toMatchObject({ status: 403, body: { code: 'PLATFORM_WRITE_NEEDS_SCHOOL', message: HTTP_ERROR_SENTENCES.PLATFORM_WRITE_NEEDS_SCHOOL } });
    expect(await zones()).toEqual({ [schoolA.id]: 'Africa/Kampala', [schoolB.id]: 'Africa/Kampala' });
  });
});
