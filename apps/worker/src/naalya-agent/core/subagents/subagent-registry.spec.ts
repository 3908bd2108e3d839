import { AGENT_RUN_MODES, AGENT_TOOL_ROLES, type AgentRunModeName, type AgentToolRole } from '@naalya/agent-tools';
import { fakeModel } from 'langchain';
import { describe, expect, it, vi } from 'vitest';
import { schoolContext } from '../tools/tool-context.fixture.js';
import { FakeToolCaller } from '../../testing/fake-tool-caller.fixture.js';
import { classTeacherSubagent } from './class-teacher.subagent.js';
import { dosSubagent } from './dos.subagent.js';
import { SUBAGENT_FACTORIES, selectSubagents } from './subagent-registry.js';
import type { SubagentFactory } from './subagent.types.js';

vi.mock('@naalya/agent-tools', async (importOriginal) => {
  const { withProbeTools } = await import('../../testing/probe-registry.fixture.js');
  return withProbeTools(await importOriginal());
});

const deps = { modelFor: () => fakeModel() };
const caller = new FakeToolCaller();
const names = (tools: Array<{ name: string }>) => tools.map((tool) => tool.name);

describe('SUBAGENT_FACTORIES and selectSubagents', () => {
  it('has exactly one factory per AgentToolRole (a missing role does not compile)', () => {
    // @ts-expect-error the dos factory is missing: Record<AgentToolRole, SubagentFactory> demands every role
    const incomplete: Record<AgentToolRole, SubagentFactory> = { class_teacher: classTeacherSubagent, subject_teacher: dosSubagent };
    expect(Object.keys(incomplete)).toHaveLength(2);
    expect(Object.keys(SUBAGENT_FACTORIES)).toEqual([...AGENT_TOOL_ROLES]);
  });

  it('registers only the roles eligibleAgentRoles allows, in registration order', () => {
    const only = (capabilities: { isClassTeacher: boolean; isSubjectTeacher: boolean; isDirectorOfStudies: boolean }) =>
      selectSubagents({ ...schoolContext(), capabilities }, caller, deps).map((subagent) => subagent.name);

    expect(only({ isClassTeacher: true, isSubjectTeacher: true, isDirectorOfStudies: true })).toEqual(['class_teacher', 'subject_teacher', 'dos']);
    expect(only({ isClassTeacher: false, isSubjectTeacher: true, isDirectorOfStudies: true })).toEqual(['subject_teacher', 'dos']);
    expect(only({ isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: false })).toEqual([]);
  });

  // The probe registry's belts, written out (testing/probe-registry.fixture.ts): approve_lesson_plan is school mode only.
  const BELTS: Record<AgentToolRole, Record<AgentRunModeName, string[]>> = {
    class_teacher: {
      school: ['list_my_classes', 'list_class_students', 'record_attendance', 'get_branding', 'ask_user'],
      campus: ['list_my_classes', 'list_class_students', 'record_attendance', 'get_branding', 'ask_user'],
    },
    subject_teacher: {
      school: ['list_my_teaching_assignments', 'get_gradebook', 'get_branding', 'ask_user'],
      campus: ['list_my_teaching_assignments', 'get_gradebook', 'get_branding', 'ask_user'],
    },
    dos: {
      school: ['list_pending_lesson_plans', 'approve_lesson_plan', 'get_branding', 'ask_user'],
      campus: ['list_pending_lesson_plans', 'get_branding', 'ask_user'],
    },
  };

  it.each(AGENT_TOOL_ROLES.flatMap((role) => AGENT_RUN_MODES.map((mode) => [role, mode] as const)))(
    'the %s specialist in %s mode has explicit tools: its role belt plus ask_user, and its own model',
    (role, mode) => {
      const context = mode === 'campus' ? { ...schoolContext(), runMode: { mode: 'campus' as const, campus: { id: 'c1', name: 'Kisasi' } } } : schoolContext();
      const model = fakeModel();
      const subagent = SUBAGENT_FACTORIES[role](context, caller, { modelFor: (speaker) => (speaker === role ? model : fakeModel()) });

      expect(subagent.name).toBe(role);
      expect(names(subagent.tools)).toEqual(BELTS[role][mode]);
      expect(subagent.model).toBe(model);
      expect(subagent.description).not.toContain('\u2014');
      expect(String(subagent.systemPrompt)).not.toContain('\u2014');
    },
  );

  it('a dos-only tool is off the belt in campus mode', () => {
    const campus = { ...schoolContext(), runMode: { mode: 'campus' as const, campus: { id: 'c1', name: 'Kisasi' } } };
    expect(names(SUBAGENT_FACTORIES.dos(schoolContext(), caller, deps).tools)).toContain('approve_lesson_plan');
    expect(names(SUBAGENT_FACTORIES.dos(campus, caller, deps).tools)).not.toContain('approve_lesson_plan');
  });
});
