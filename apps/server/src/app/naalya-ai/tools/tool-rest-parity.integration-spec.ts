import { resultMismatch } from '@naalya/agent-tools';
import type { DemoPersona } from '../../seed/demo-seed.js';
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
  ...(
    [
      'schoolAdmin',
      'campusAdmin',
      'departmentHead',
      'teacher',
      'deactivated',
      'classTeacher',
      'subjectTeacher',
      'bothHats',
      'directorOfStudies',
      'registrar',
    ] as const
  ).map((key) => ({
    label: key,
    persona: (app: TestApp) => app.demo.schools[0].personas[key],
  })),
  { label: 'platformAdmin', persona: (app) => app.demo.platformAdmin },
  { label: 'platformAdmin in a target school', persona: (app) => app.demo.platformAdmin, targetSchool: true },
];

/** Everything of school A a call could change: a digest of its rows in every table with a school column. */
const snapshotOf = async (testApp: TestApp, schoolId: string) => {
  const tables = (await testApp.owner.query(
    `SELECT table_name AS name FROM information_schema.columns WHERE table_schema = 'public' AND column_name = 'school_id' ORDER BY table_name`,
  )) as { name: string }[];
  const digests: Record<string, string> = {};
  for (const { name } of tables) {
    const [row] = await testApp.owner.query(`SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) AS digest FROM "${name}" t WHERE school_id = $1`, [schoolId]);
    digests[name] = row.digest;
  }
  return digests;
};

/** The ids of school A's rows that a response could leak. */
const idsOf = async (testApp: TestApp, schoolId: string): Promise<Set<string>> => {
  const rows = (await testApp.owner.query(
    `SELECT id::text FROM users WHERE school_id = $1 UNION ALL SELECT id::text FROM departments WHERE school_id = $1
     UNION ALL SELECT id::text FROM classes WHERE school_id = $1 UNION ALL SELECT id::text FROM students WHERE school_id = $1
     UNION ALL SELECT id::text FROM campuses WHERE school_id = $1 UNION ALL SELECT id::text FROM subjects WHERE school_id = $1
     UNION ALL SELECT id::text FROM teaching_assignments WHERE school_id = $1 UNION ALL SELECT id::text FROM lesson_plans WHERE school_id = $1`,
    [schoolId],
  )) as { id: string }[];
  return new Set(rows.map((row) => row.id));
};

const mentions = (value: unknown, ids: Set<string>) => (JSON.stringify(value ?? null).match(/[0-9a-f-]{36}/g) ?? []).some((id) => ids.has(id));

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
        await dispatchEnvelope(persona, fixture.tool, toolCall.args, { targetSchoolId }),
      );
      const restCall = await fixture.allowed(context);
      const rest = await callRest(testApp, persona, fixture.rest, restCall.args, { targetSchoolId });
      expect(rest.status).toBeLessThan(500);
      expect({ allowed: 'data' in toolResult }).toEqual({ allowed: rest.status < 300 });
      // Every user's answer, not only the fixture's (an empty list, a student with no mark yet), has the shape the
      // tool's result schema describes and a client renders from.
      if ('data' in toolResult) expect(resultMismatch(fixture.tool, toolResult.data)).toBeUndefined();
    },
  );

  it.each(
    (['schoolAdmin', 'campusAdmin', 'departmentHead', 'teacher', 'classTeacher', 'subjectTeacher', 'directorOfStudies', 'registrar'] as const).map(
      (key) => [key] as const,
    ),
  )("a %s of the other school gets nothing and changes nothing", async (key) => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const outsider = schoolB.personas[key];
    const context = { demo: testApp.demo, owner: testApp.owner };
    const toolCall = await fixture.allowed(context);
    const restCall = await fixture.allowed(context);
    const before = await snapshotOf(testApp, schoolA.id);
    const result = await invokeTool(testApp.module, fixture.tool, await dispatchEnvelope(outsider, fixture.tool, toolCall.args));
    const rest = await callRest(testApp, outsider, fixture.rest, restCall.args);
    // Calls that name school A's rows are refused; calls that name none answer with the outsider's own school.
    // Either way nothing of school A appears in the answer and nothing of it changes.
    const schoolAIds = await idsOf(testApp, schoolA.id);
    expect(mentions('data' in result ? result.data : undefined, schoolAIds)).toBe(false);
    expect(mentions(rest.body, schoolAIds)).toBe(false);
    if (mentions(toolCall.args, schoolAIds)) {
      expect(result).toHaveProperty('error');
      expect(rest.status).toBeGreaterThanOrEqual(400);
    }
    expect(await snapshotOf(testApp, schoolA.id)).toEqual(before);
  });
});
