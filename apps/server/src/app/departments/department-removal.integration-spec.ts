import { ActionAuditAction } from '@naalya/access';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRest } from '../../testing/rest-client.js';
import { raceOnLockedRow } from '../../testing/row-race.js';
import { createTestApp, type TestApp } from '../../testing/test-app.js';
import type { FixtureRestRoute } from '../naalya-ai/tools/fixtures/tool-fixture.js';
import { DepartmentController } from './department.controller.js';

let testApp: TestApp;
let school: TestApp['demo']['schools'][0];

beforeAll(async () => {
  testApp = await createTestApp();
  school = testApp.demo.schools[0];
});
afterAll(() => testApp?.close());

const createRoute: FixtureRestRoute = { method: 'POST', path: () => '/departments', handler: [DepartmentController, 'create'] };
const removeRoute: FixtureRestRoute = {
  method: 'DELETE',
  path: (args) => `/departments/${String(args['departmentId'])}`,
  handler: [DepartmentController, 'remove'],
};
const remove = (departmentId: string) => callRest(testApp, school.personas.schoolAdmin, removeRoute, { departmentId });
const deleteAudits = async (departmentId: string) =>
  Number(
    ((await testApp.owner.query(`SELECT count(*) FROM audit_log WHERE resource_id = $1 AND action = $2`, [departmentId, ActionAuditAction.DELETE])) as {
      count: string;
    }[])[0].count,
  );

describe('deleting a department is conditional on it still existing', () => {
  it('of two concurrent deletes of one department exactly one succeeds; the other gets not found, and one audit row is written', async () => {
    const created = await callRest(testApp, school.personas.schoolAdmin, createRoute, { name: 'Raced Department' });
    const departmentId = (created.body as { id: string }).id;
    const answers = await raceOnLockedRow(testApp.owner, { sql: `SELECT id FROM departments WHERE id = $1 FOR NO KEY UPDATE`, parameters: [departmentId] }, () => [
      remove(departmentId),
      remove(departmentId),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 404]);
    expect(answers.find((answer) => answer.status === 404)).toEqual({ status: 404, body: expect.objectContaining({ message: 'Department not found.' }) });
    expect(await deleteAudits(departmentId)).toBe(1);
  });
});
