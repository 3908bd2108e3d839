import {
  AGENT_RUN_MODES,
  AGENT_TOOL_ROLES,
  RPC_AGENT_TOOLS,
  getGradebookTool,
  isMutatingEvent,
  listClassStudentsTool,
  recordMarksTool,
  requiresConfirmation,
  toolsForMode,
  toolsForRole,
  type AgentToolResult,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { TOOL_FIXTURES } from './fixtures/tool-fixtures.js';
import { lookups } from './fixtures/school-lookups.js';
import { insertPendingLessonPlan, studentsOf } from './fixtures/tool-fixture.js';
import { DEFAULT_RELATIONSHIP_SCOPE_NOTE, ToolExecutor } from './tool-executor.js';
import type { ToolPosture } from './tool-posture.js';

let testApp: TestApp;
let school: TestApp['demo']['schools'][0];

beforeAll(async () => {
  testApp = await createTestApp();
  school = testApp.demo.schools[0];
});
afterAll(() => testApp?.close());

const call = async (tool: AnyAgentTool, persona: Parameters<typeof dispatchEnvelope>[0], args: Record<string, unknown>, options = {}) =>
  invokeTool(testApp.module, tool, await dispatchEnvelope(persona, tool, args, options));

const dataOf = <T>(result: AgentToolResult): T => {
  if ('error' in result) throw new Error(`expected data, got: ${result.error}`);
  return result.data as T;
};

describe('relationship rules hold for people who are not the owner', () => {
  it('another teacher with the same permissions cannot list a class that is not theirs', async () => {
    const { angelasClass } = lookups(school);
    expect(await call(listClassStudentsTool, school.personas.bothHats, { classId: angelasClass.id })).toEqual({
      error: "Only the class teacher or a director of studies can see this class's students.",
      code: 'PERMISSION_DENIED',
    });
    expect(dataOf<unknown[]>(await call(listClassStudentsTool, school.personas.classTeacher, { classId: angelasClass.id }))).toHaveLength(20);
  });

  it('a member of staff holding STUDENT READ who is not the class teacher is refused by list_class_students', async () => {
    const result = await call(listClassStudentsTool, school.personas.registrar, { classId: lookups(school).angelasClass.id });
    expect(result).toEqual({ error: "Only the class teacher or a director of studies can see this class's students.", code: 'PERMISSION_DENIED' });
  });

  it('a director of studies may list any class of the school (the second role of list_class_students)', async () => {
    const otherCampusClass = school.teaching.classes.find((stream) => stream.campusId === school.campuses[1].id)!;
    expect(dataOf<unknown[]>(await call(listClassStudentsTool, school.personas.directorOfStudies, { classId: otherCampusClass.id }))).toHaveLength(20);
  });

  it('a subject teacher asking for the gradebook of a stream they teach sees only their own subject, never the whole class', async () => {
    const { angelasClass, mathematics } = lookups(school);
    const gradebook = dataOf<{ subjects: { subjectId: string }[] }>(
      await call(getGradebookTool, school.personas.subjectTeacher, { classId: angelasClass.id }),
    );
    expect(gradebook.subjects.map((subject) => subject.subjectId)).toEqual([mathematics.id]);
  });

  it('a teacher cannot record marks for a subject they do not teach, and nothing is written', async () => {
    const { angelasClass, english } = lookups(school);
    const [studentId] = await studentsOf(testApp.owner, angelasClass.id, 1);
    const before = await testApp.owner.query(`SELECT score FROM marks WHERE student_id = $1 AND subject_id = $2`, [studentId, english.id]);
    const result = await call(recordMarksTool, school.personas.subjectTeacher, {
      classId: angelasClass.id,
      subjectId: english.id,
      marks: [{ studentId, score: 99 }],
    });
    expect(result).toEqual({ error: 'You do not teach that subject in this class.', code: 'PERMISSION_DENIED' });
    expect(await testApp.owner.query(`SELECT score FROM marks WHERE student_id = $1 AND subject_id = $2`, [studentId, english.id])).toEqual(before);
  });

  it('a teacher cannot record marks in a stream they do not teach', async () => {
    const { mathematics } = lookups(school);
    const notTaught = school.teaching.classes.find(
      (stream) => !school.teaching.teachingAssignments.some((a) => a.classId === stream.id && a.teacherId === school.personas.subjectTeacher.id),
    )!;
    const [studentId] = await studentsOf(testApp.owner, notTaught.id, 1);
    const result = await call(recordMarksTool, school.personas.subjectTeacher, {
      classId: notTaught.id,
      subjectId: mathematics.id,
      marks: [{ studentId, score: 99 }],
    });
    expect(result).toEqual({ error: 'You do not teach that subject in this class.', code: 'PERMISSION_DENIED' });
  });

  it('record_marks writes several marks with one audit row', async () => {
    const { angelasClass, mathematics } = lookups(school);
    const students = await studentsOf(testApp.owner, angelasClass.id, 5);
    const envelope = await dispatchEnvelope(school.personas.subjectTeacher, recordMarksTool, {
      classId: angelasClass.id,
      subjectId: mathematics.id,
      marks: students.map((studentId, index) => ({ studentId, score: 60 + index })),
    });
    const result = await invokeTool(testApp.module, recordMarksTool, envelope);
    expect(result).toMatchObject({ data: { recorded: 5 } });
    const [{ count }] = await testApp.owner.query(`SELECT count(*)::int AS count FROM audit_log WHERE call_id = $1`, [envelope.meta.callId]);
    expect(count).toBe(1);
  });
});

/**
 * Each campus-scoped tool in campus mode pinned to the second campus, with the model naming the first
 * one: the envelope's campus wins, and rows of the first campus read as not found.
 */
describe('campus mode pins the envelope campus for every campus-scoped tool', () => {
  type CampusCase = { persona: () => Parameters<typeof dispatchEnvelope>[0]; args: () => Promise<Record<string, unknown>>; expect: 'not found' | 'pinned list' };
  const firstCampusClass = () => lookups(school).angelasClass.id;
  const CASES: Record<string, CampusCase> = {
    list_staff: { persona: () => school.personas.schoolAdmin, args: async () => ({}), expect: 'pinned list' },
    list_departments: { persona: () => school.personas.schoolAdmin, args: async () => ({}), expect: 'pinned list' },
    create_department: { persona: () => school.personas.schoolAdmin, args: async () => ({ name: `Pinned ${Date.now()}` }), expect: 'pinned list' },
    list_my_classes: { persona: () => school.personas.classTeacher, args: async () => ({}), expect: 'pinned list' },
    list_class_students: { persona: () => school.personas.classTeacher, args: async () => ({ classId: firstCampusClass() }), expect: 'not found' },
    record_attendance: {
      persona: () => school.personas.classTeacher,
      args: async () => ({
        classId: firstCampusClass(),
        date: '2026-03-11',
        entries: [{ studentId: (await studentsOf(testApp.owner, firstCampusClass(), 1))[0], status: 'present' }],
      }),
      expect: 'not found',
    },
    list_my_teaching_assignments: { persona: () => school.personas.subjectTeacher, args: async () => ({}), expect: 'pinned list' },
    get_gradebook: { persona: () => school.personas.subjectTeacher, args: async () => ({ classId: firstCampusClass() }), expect: 'not found' },
    record_marks: {
      persona: () => school.personas.subjectTeacher,
      args: async () => ({
        classId: firstCampusClass(),
        subjectId: lookups(school).mathematics.id,
        marks: [{ studentId: (await studentsOf(testApp.owner, firstCampusClass(), 1))[0], score: 50 }],
      }),
      expect: 'not found',
    },
    get_results_summary: { persona: () => school.personas.directorOfStudies, args: async () => ({}), expect: 'pinned list' },
    assign_subject_teacher: {
      persona: () => school.personas.directorOfStudies,
      args: async () => ({ classId: firstCampusClass(), subjectId: lookups(school).mathematics.id, staffId: school.personas.subjectTeacher.id }),
      expect: 'not found',
    },
    list_pending_lesson_plans: { persona: () => school.personas.directorOfStudies, args: async () => ({}), expect: 'pinned list' },
    approve_lesson_plan: {
      persona: () => school.personas.directorOfStudies,
      args: async () => ({
        lessonPlanId: await insertPendingLessonPlan(testApp.owner, school.id, lookups(school).benjaminsMathematics.id, school.personas.subjectTeacher.id),
      }),
      expect: 'not found',
    },
  };

  it('covers exactly the campus-scoped tools', () => {
    expect(Object.keys(CASES).sort()).toEqual(RPC_AGENT_TOOLS.filter((tool: AnyAgentTool) => tool.campusScoped).map((tool) => tool.name).sort());
  });

  it.each(RPC_AGENT_TOOLS.filter((tool: AnyAgentTool) => tool.campusScoped).map((tool) => [tool.name, tool] as const))(
    '%s: the envelope campus wins over a model-supplied one',
    async (name, tool) => {
      const [firstCampus, secondCampus] = school.campuses;
      const testCase = CASES[name];
      const result = await call(tool, testCase.persona(), { ...(await testCase.args()), campusId: firstCampus.id }, { campusId: secondCampus.id });
      if (testCase.expect === 'not found') {
        expect(result).toEqual({ error: expect.any(String), code: 'NOT_FOUND' });
        return;
      }
      expect(result).toMatchObject({ data: expect.anything() });
      const text = JSON.stringify(dataOf(result));
      expect(text).not.toContain(firstCampus.id);
      expect(text).not.toContain(firstCampus.name);
    },
  );
});

describe('belts', () => {
  it('the belt of every role and mode, with each tool\'s posture, is pinned for review', async () => {
    const executor = testApp.module.get(ToolExecutor);
    const postures = new Map<string, ToolPosture<unknown>>();
    for (const fixture of TOOL_FIXTURES) {
      const spy = vi.spyOn(executor, 'execute');
      const allowed = await fixture.allowed({ demo: testApp.demo, owner: testApp.owner });
      await invokeTool(testApp.module, fixture.tool, await dispatchEnvelope(allowed.persona, fixture.tool, allowed.args, allowed.options));
      postures.set(fixture.tool.name, spy.mock.calls.at(-1)![2] as ToolPosture<unknown>);
      spy.mockRestore();
    }
    const line = (tool: AnyAgentTool) => {
      const posture = postures.get(tool.name)!;
      const guard = posture.auth === 'casl' ? `gate ${posture.gate.action} ${posture.gate.resource}` : `note "${posture.scopeNote ?? DEFAULT_RELATIONSHIP_SCOPE_NOTE}"`;
      return `| ${tool.name} | ${tool.event} | ${posture.auth} | ${guard} | ${posture.audit ? 'audited' : 'read'}${isMutatingEvent(tool.event) !== Boolean(posture.audit) ? ' (MISMATCH)' : ''}${requiresConfirmation(tool) ? ', the user confirms each call' : ''} |`;
    };
    const sections = AGENT_RUN_MODES.flatMap((mode) => [
      `## Rover, ${mode} mode`,
      '| tool | event | posture | gate or note | audit |',
      '|---|---|---|---|---|',
      ...toolsForMode(mode).filter((tool) => !tool.roles?.length).map(line),
      ...AGENT_TOOL_ROLES.flatMap((role) => [
        '',
        `## ${role}, ${mode} mode`,
        '| tool | event | posture | gate or note | audit |',
        '|---|---|---|---|---|',
        ...toolsForRole(role, mode).map(line),
      ]),
      '',
    ]);
    await expect(`# Agent belts\n\n${sections.join('\n')}`).toMatchFileSnapshot('./__snapshots__/agent-belts.md');
  });
});
