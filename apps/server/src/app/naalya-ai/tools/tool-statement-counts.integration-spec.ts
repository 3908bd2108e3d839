import { RPC_AGENT_TOOLS, createDepartmentTool, listDepartmentsTool, type AnyAgentTool } from '@naalya/agent-tools';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { dispatchEnvelope, type DispatchOptions } from '../../../testing/dispatch-envelope.js';
import { recordStatements } from '../../../testing/statement-counter.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { uniqueName } from './fixtures/tool-fixture.js';
import { TOOL_FIXTURES } from './fixtures/tool-fixtures.js';

/**
 * Statements PostgreSQL receives for one successful call of each tool through execute(), BEGIN and COMMIT included
 * (the quota's amortised block reservations excluded). Every statement is a round trip holding a pooled connection,
 * and PostgreSQL's CPU is what a busy server runs out of first: a change that adds one must show up here, not only in
 * the bench. Lower a count when a change lowers it; never raise one to make this pass.
 */
const PINNED_STATEMENTS: Record<string, number> = {
  list_staff: 5,
  list_departments: 4,
  create_department: 8,
  delete_department: 10,
  add_department_member: 11,
  get_school_branding: 4,
  update_school_branding: 10,
  list_campuses: 4,
  list_subjects: 4,
  list_my_classes: 4,
  list_class_students: 6,
  record_attendance: 8,
  list_my_teaching_assignments: 4,
  assign_subject_teacher: 12,
  get_gradebook: 10,
  record_marks: 10,
  get_results_summary: 5,
  create_lesson_plan: 7,
  list_lesson_plans: 4,
  list_pending_lesson_plans: 4,
  approve_lesson_plan: 9,
  get_tool_call_outcome: 4,
};

let testApp: TestApp;
let recorder: ReturnType<typeof recordStatements>;

beforeAll(async () => {
  testApp = await createTestApp();
  recorder = recordStatements(testApp.database.name);
});
afterAll(async () => {
  recorder?.remove();
  await testApp?.close();
});

/** The statements of one call that must succeed (a refusal would stop early and count less). */
const countCall = async (tool: AnyAgentTool, persona: DemoPersona, args: Record<string, unknown>, options?: DispatchOptions): Promise<string[]> => {
  const envelope = await dispatchEnvelope(persona, tool, args, options);
  const { result, statements } = await recorder.during(() => invokeTool(testApp.module, tool, envelope));
  expect({ tool: tool.name, result }).toEqual({ tool: tool.name, result: expect.objectContaining({ data: expect.anything() }) });
  return statements;
};

describe('statements per tool call', () => {
  it('every tool in RPC_AGENT_TOOLS sends exactly its pinned number of statements for one successful call', async () => {
    const measured: Record<string, number> = {};
    const texts: Record<string, string[]> = {};
    for (const tool of RPC_AGENT_TOOLS) {
      const fixture = TOOL_FIXTURES.find((candidate) => candidate.tool.event === tool.event);
      if (!fixture) throw new Error(`${tool.name} has no fixture`);
      const call = await fixture.allowed({ demo: testApp.demo, owner: testApp.owner });
      const statements = await countCall(tool, call.persona, call.args, call.options);
      measured[tool.name] = statements.length;
      texts[tool.name] = statements;
    }
    // The texts ride along in the failure message: which statement came or went.
    expect({ measured, texts }).toEqual({ measured: PINNED_STATEMENTS, texts });
  });

  it("the bench's calls (a school administrator listing departments, and creating a school-wide one) send their pinned counts", async () => {
    const admin = testApp.demo.schools[0].personas.schoolAdmin;
    const read = await countCall(listDepartmentsTool, admin, {});
    const write = await countCall(createDepartmentTool, admin, { name: uniqueName('Bench') });
    expect({ read: read.length, write: write.length, texts: { read, write } }).toEqual({ read: 4, write: 6, texts: { read, write } });
  });

  it("the counter counts the app role's statements in this database, and not the owner's checks beside them", async () => {
    const { statements } = await recorder.during(async () => {
      await testApp.owner.query('SELECT 2');
      await testApp.module.get(DataSource).query('SELECT 1');
    });
    expect(statements).toEqual(['SELECT 1']);
  });
});
