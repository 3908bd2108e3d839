import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRest } from '../testing/rest-client.js';
import { createTestApp, type TestApp } from '../testing/test-app.js';
import { addDepartmentMemberFixture } from './naalya-ai/tools/fixtures/add-department-member.fixture.js';
import { assignSubjectTeacherFixture } from './naalya-ai/tools/fixtures/assign-subject-teacher.fixture.js';
import { recordAttendanceFixture } from './naalya-ai/tools/fixtures/record-attendance.fixture.js';
import { recordMarksFixture } from './naalya-ai/tools/fixtures/record-marks.fixture.js';
import type { FixtureCall, ToolFixture } from './naalya-ai/tools/fixtures/tool-fixture.js';
import { updateSchoolBrandingFixture } from './naalya-ai/tools/fixtures/update-school-branding.fixture.js';

let testApp: TestApp;

beforeAll(async () => {
  testApp = await createTestApp();
});
afterAll(() => testApp?.close());

const CONCURRENT = 6;

/**
 * Writes that set a value (upserts) rather than move a state: repeating one is allowed and changes nothing more, so
 * concurrent copies must all answer as a sequential repeat does (never a 500 from a unique violation of a
 * check-then-insert), and leave one row.
 */
describe.each<[string, ToolFixture, (call: FixtureCall) => Promise<unknown>]>([
  // The school's first branding: an insert, nothing to lock yet.
  ['update_school_branding', updateSchoolBrandingFixture, (call) => testApp.owner.query(`DELETE FROM school_branding WHERE school_id = $1`, [call.persona.schoolId])],
  ['assign_subject_teacher', assignSubjectTeacherFixture, async () => undefined],
  ['add_department_member', addDepartmentMemberFixture, async () => undefined],
  ['record_marks', recordMarksFixture, async () => undefined],
  ['record_attendance', recordAttendanceFixture, async () => undefined],
])('%s over REST', (_, fixture, prepare) => {
  it(`${CONCURRENT} concurrent identical requests all succeed as a sequential repeat does`, async () => {
    const call = await fixture.allowed({ demo: testApp.demo, owner: testApp.owner });
    await prepare(call);
    const answers = await Promise.all(
      Array.from({ length: CONCURRENT }, () => callRest(testApp, call.persona, fixture.rest, call.args, { targetSchoolId: call.options?.targetSchoolId })),
    );
    const repeat = await callRest(testApp, call.persona, fixture.rest, call.args, { targetSchoolId: call.options?.targetSchoolId });
    expect(repeat.status).toBeLessThan(300);
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: CONCURRENT }, () => repeat.status));
  });
});
