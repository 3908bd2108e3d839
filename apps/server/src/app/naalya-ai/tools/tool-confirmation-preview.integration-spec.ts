import { RPC_AGENT_TOOLS, requiresConfirmation, type AgentToolResult, type AnyAgentTool } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { lookups } from './fixtures/school-lookups.js';
import type { FixtureCall, FixtureContext } from './fixtures/tool-fixture.js';
import { TOOL_FIXTURES } from './fixtures/tool-fixtures.js';

let testApp: TestApp;
let context: FixtureContext;

beforeAll(async () => {
  testApp = await createTestApp();
  context = { demo: testApp.demo, owner: testApp.owner };
});
afterAll(() => testApp?.close());

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

const confirmable = RPC_AGENT_TOOLS.filter(requiresConfirmation);
const fixtureOf = (tool: AnyAgentTool) => {
  const fixture = TOOL_FIXTURES.find((candidate) => candidate.tool === tool);
  if (!fixture) throw new Error(`No fixture for ${tool.name}`);
  return fixture;
};

const ownerValue = async (sql: string, parameters: unknown[]): Promise<string> => {
  const [row] = (await testApp.owner.query(sql, parameters)) as { value: string }[];
  return row.value;
};

/** What each question must name (the resource, its owner) and say will change, read from the records the fixture made. */
const MUST_NAME: Record<string, (call: FixtureCall) => Promise<string[]>> = {
  approve_lesson_plan: async (call) => [
    `"${await ownerValue(`SELECT title AS value FROM lesson_plans WHERE id = $1`, [call.args['lessonPlanId']])}"`,
    "Benjamin Ssali's",
    'week of 16 March 2026',
    'It is pending; it becomes approved',
  ],
  delete_department: async (call) => [
    `"${await ownerValue(`SELECT name AS value FROM departments WHERE id = $1`, [call.args['departmentId']])}"`,
    `(${context.demo.schools[0].campuses[1].name})`,
    'no members',
    'removed for good',
  ],
  assign_subject_teacher: async () => {
    const { angelasClass, mathematics } = lookups(context.demo.schools[0]);
    return ['Make Benjamin Ssali', `the ${mathematics.name} teacher of ${angelasClass.name}`, 'already teaches it there, so nothing changes'];
  },
};

const preview = async (tool: AnyAgentTool, persona: DemoPersona, args: Record<string, unknown>, options: FixtureCall['options'] = {}) => {
  // No approval is recorded: a preview needs none, and must run nothing.
  const envelope = await dispatchEnvelope(persona, tool, args, { ...options, approval: 'none' });
  return invokeTool(testApp.module, tool, { ...envelope, meta: { ...envelope.meta, preview: true } });
};

const writesOf = async (callId?: string) => {
  const [{ audits }] = (await testApp.owner.query(`SELECT count(*)::int AS audits FROM audit_log`)) as { audits: number }[];
  const [{ ledger }] = (await testApp.owner.query(`SELECT count(*)::int AS ledger FROM tool_call_ledger WHERE call_id = $1`, [callId ?? ''])) as { ledger: number }[];
  return { audits, ledger };
};

const questionOf = (result: AgentToolResult) => ('data' in result ? (result.data as { question?: unknown }).question : undefined);

describe('a confirmable call is previewed from the records, through its own handler and gate', () => {
  it('every confirmable tool has a fixture and a question check here', () => {
    expect(confirmable.map((tool) => tool.name).sort()).toEqual(Object.keys(MUST_NAME).sort());
  });

  it.each(confirmable.map((tool) => [tool.name, tool] as const))(
    '%s: the question names the resource and the change, contains no id, and the preview writes nothing',
    async (name, tool) => {
      const call = await fixtureOf(tool).allowed(context);
      const before = await writesOf();
      const result = await preview(tool, call.persona, call.args, call.options);
      const question = questionOf(result);
      expect(typeof question).toBe('string');
      for (const words of await MUST_NAME[name](call)) expect(question).toContain(words);
      expect(question).not.toMatch(UUID);
      expect(await writesOf()).toEqual(before);
    },
  );

  it.each(confirmable.map((tool) => [tool.name, tool] as const))(
    '%s: a caller the rules refuse gets the refusal the call itself gets, and no question',
    async (_, tool) => {
      const denied = await fixtureOf(tool).denied(context);
      const result = await preview(tool, denied.persona, denied.args, denied.options);
      expect(questionOf(result)).toBeUndefined();
      expect(result).toMatchObject({ error: denied.refusal });
    },
  );

  it.each(confirmable.map((tool) => [tool.name, tool] as const))(
    "%s: another school's resource is refused without a question, exactly as the approved call is refused",
    async (_, tool) => {
      const call = await fixtureOf(tool).allowed(context);
      // The same hat in the other school, reaching for this school's resource by its id.
      const key = call.persona.key as keyof (typeof context.demo.schools)[1]['personas'];
      const outsider = context.demo.schools[1].personas[key];
      const previewed = await preview(tool, outsider, call.args);
      expect(questionOf(previewed)).toBeUndefined();
      const envelope = await dispatchEnvelope(outsider, tool, call.args);
      const called = await invokeTool(testApp.module, tool, envelope);
      expect('error' in called).toBe(true);
      expect(previewed).toEqual(called);
    },
  );

  it("an edit of assign_subject_teacher's teacher to another school's member of staff is refused at preview, so nothing is asked", async () => {
    const tool = RPC_AGENT_TOOLS.find((candidate) => candidate.name === 'assign_subject_teacher')!;
    expect(tool.confirm?.editable).toContain('staffId');
    const call = await fixtureOf(tool).allowed(context);
    // What the worker previews after the person's edit: the same call with only the editable argument changed.
    const edited = { ...call.args, staffId: context.demo.schools[1].personas.subjectTeacher.id };
    const before = await writesOf();
    const previewed = await preview(tool, call.persona, edited, call.options);
    expect(questionOf(previewed)).toBeUndefined();
    expect(previewed).toMatchObject({ error: expect.any(String) });
    expect(await writesOf()).toEqual(before);
  });

  it('a tool that needs no confirmation has no preview: the request is refused and nothing runs', async () => {
    const tool = RPC_AGENT_TOOLS.find((candidate) => candidate.name === 'create_department')!;
    const call = await fixtureOf(tool).allowed(context);
    const before = await writesOf();
    expect(await preview(tool, call.persona, call.args, call.options)).toMatchObject({ code: 'TOOL_MISMATCH' });
    expect(await writesOf()).toEqual(before);
  });
});
