import { ActionAuditAction } from '@naalya/access';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRest } from '../../testing/rest-client.js';
import { raceOnLockedRow } from '../../testing/row-race.js';
import { createTestApp, type TestApp } from '../../testing/test-app.js';
import { insertPendingLessonPlan, type FixtureRestRoute } from '../naalya-ai/tools/fixtures/tool-fixture.js';
import { LessonPlanController } from './lesson-plan.controller.js';

let testApp: TestApp;
let school: TestApp['demo']['schools'][0];
let teachingAssignmentId: string;

beforeAll(async () => {
  testApp = await createTestApp();
  school = testApp.demo.schools[0];
  [{ id: teachingAssignmentId }] = (await testApp.owner.query(`SELECT id FROM teaching_assignments WHERE teacher_id = $1 LIMIT 1`, [
    school.personas.subjectTeacher.id,
  ])) as { id: string }[];
});
afterAll(() => testApp?.close());

const approveRoute: FixtureRestRoute = {
  method: 'POST',
  path: (args) => `/lesson-plans/${String(args['lessonPlanId'])}/approve`,
  body: () => ({}),
  handler: [LessonPlanController, 'approve'],
};
const approve = (lessonPlanId: string) => callRest(testApp, school.personas.directorOfStudies, approveRoute, { lessonPlanId });
const approvalAudits = async (lessonPlanId: string) =>
  Number(((await testApp.owner.query(`SELECT count(*) FROM audit_log WHERE resource_id = $1 AND action = $2`, [lessonPlanId, ActionAuditAction.APPROVE])) as { count: string }[])[0].count);

describe('approving a lesson plan is conditional on it still being pending', () => {
  it('of two concurrent approvals exactly one succeeds; the other gets the already-approved refusal, and one audit row is written', async () => {
    const lessonPlanId = await insertPendingLessonPlan(testApp.owner, school.id, teachingAssignmentId, school.personas.subjectTeacher.id);
    const answers = await raceOnLockedRow(testApp.owner, { sql: `SELECT id FROM lesson_plans WHERE id = $1 FOR NO KEY UPDATE`, parameters: [lessonPlanId] }, () => [
      approve(lessonPlanId),
      approve(lessonPlanId),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
    const sequential = await approve(lessonPlanId);
    expect(answers.find((answer) => answer.status === 409)).toEqual(sequential);
    expect(sequential).toEqual({ status: 409, body: expect.objectContaining({ message: 'That lesson plan is already approved.' }) });
    expect(await approvalAudits(lessonPlanId)).toBe(1);
  });
});
