import type { DemoPersona } from '../../core/database/seed/demo-seed.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { callRest } from '../../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { TOOL_FIXTURES } from './fixtures/tool-fixtures.js';

let testApp: TestApp;

beforeAll(async () => {
  testApp = await createTestApp();
});
afterAll(() => testApp?.close());

type Caller = { label: string; persona: (testApp: TestApp) => DemoPersona; targetSchool?: boolean };

const CALLERS: Caller[] = [
  ...(['schoolAdmin', 'campusAdmin', 'departmentHead', 'teacher', 'deactivated'] as const).map((key) => ({
    label: key,
    persona: (app: TestApp) => app.demo.schools[0].personas[key],
  })),
  { label: 'platformAdmin', persona: (app) => app.demo.platformAdmin },
  { label: 'platformAdmin in a target school', persona: (app) => app.demo.platformAdmin, targetSchool: true },
];

/** Everything of school A a call could change, read as the owner. */
const snapshotOf = async (testApp: TestApp, schoolId: string) =>
  testApp.owner.query(
    `SELECT
       (SELECT json_agg(d ORDER BY d.id) FROM departments d WHERE d.school_id = $1) AS departments,
       (SELECT json_agg(m ORDER BY m.department_id, m.user_id) FROM department_members m WHERE m.school_id = $1) AS members,
       (SELECT count(*) FROM audit_log a WHERE a.school_id = $1) AS audit,
       (SELECT count(*) FROM tool_call_ledger l WHERE l.school_id = $1) AS ledger`,
    [schoolId],
  );

describe.each(TOOL_FIXTURES.map((fixture) => [fixture.tool.name, fixture] as const))('%s', (_, fixture) => {
  it.each(CALLERS.map((caller) => [caller.label, caller] as const))(
    'the tool and its REST route give %s the same answer',
    async (_label, caller) => {
      const context = { demo: testApp.demo, owner: testApp.owner };
      const persona = caller.persona(testApp);
      const targetSchoolId = caller.targetSchool ? testApp.demo.schools[0].id : undefined;
      const toolCall = await fixture.allowed(context);
      const toolResult = await invokeTool(
        testApp.module,
        fixture.tool,
        dispatchEnvelope(persona, fixture.tool, toolCall.args, { targetSchoolId }),
      );
      const restCall = await fixture.allowed(context);
      const rest = await callRest(testApp, persona, fixture.rest, restCall.args, { targetSchoolId });
      expect(rest.status).toBeLessThan(500);
      expect({ allowed: 'data' in toolResult }).toEqual({ allowed: rest.status < 300 });
    },
  );

  it.each(
    (['schoolAdmin', 'campusAdmin', 'departmentHead', 'teacher'] as const).map((key) => [key] as const),
  )("a %s of the other school gets nothing and changes nothing", async (key) => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const outsider = schoolB.personas[key];
    const context = { demo: testApp.demo, owner: testApp.owner };
    const toolCall = await fixture.allowed(context);
    const restCall = await fixture.allowed(context);
    const before = await snapshotOf(testApp, schoolA.id);
    const result = await invokeTool(testApp.module, fixture.tool, dispatchEnvelope(outsider, fixture.tool, toolCall.args));
    const rest = await callRest(testApp, outsider, fixture.rest, restCall.args);
    // Reads that take no id answer with the outsider's own school: nothing of school A may appear in them.
    const leaked = (body: unknown) => JSON.stringify(body ?? null).includes(schoolA.personas.schoolAdmin.id) ||
      schoolA.departments.some((department) => JSON.stringify(body ?? null).includes(department.id));
    expect(leaked('data' in result ? result.data : undefined)).toBe(false);
    expect(leaked(rest.body)).toBe(false);
    if (Object.keys(toolCall.args).some((arg) => arg !== 'name')) expect(result).toHaveProperty('error');
    expect(await snapshotOf(testApp, schoolA.id)).toEqual(before);
  });
});
