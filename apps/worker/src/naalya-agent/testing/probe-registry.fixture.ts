import type * as AgentTools from '@naalya/agent-tools';
import type { AgentRunModeName, AgentToolRole, AnyAgentTool } from '@naalya/agent-tools';
import { z } from 'zod';

type AgentToolsModule = typeof AgentTools;

/**
 * The contract with role-tagged and shared probe tools, for suites that need specialists with known belts while
 * the real school tools are still landing; the suites keep working as the registry grows. Use from a vi.mock factory:
 *   vi.mock('@naalya/agent-tools', async (importOriginal) => withProbeTools(await importOriginal()));
 */
export const withProbeTools = (original: AgentToolsModule): AgentToolsModule => {
  const { defineAgentTool, campusIdArg } = original;
  const id = (what: string) => z.guid().describe(`The id of the ${what}.`);
  // The worker passes a result on without reading it, so a probe's result can be anything.
  const result = z.unknown();
  const probes: AnyAgentTool[] = [
    defineAgentTool({
      name: 'list_my_classes',
      event: 'list.my-classes',
      description: 'List the classes where the user is the class teacher.',
      schema: z.strictObject({ campusId: campusIdArg }),
      result,
      roles: ['class_teacher'],
    }),
    defineAgentTool({
      name: 'list_class_students',
      event: 'list.class-students',
      description: 'List the students of one of the user’s classes.',
      schema: z.strictObject({ classId: id('class') }),
      result,
      roles: ['class_teacher'],
    }),
    defineAgentTool({
      name: 'record_attendance',
      event: 'record.attendance',
      description: 'Record the attendance register of a class for one day.',
      schema: z.strictObject({
        classId: id('class'),
        date: z.iso.date().describe('The day, as YYYY-MM-DD.'),
        entries: z.array(z.strictObject({ studentId: z.guid(), status: z.enum(['present', 'absent', 'late']) })).min(1),
      }),
      result,
      roles: ['class_teacher'],
      streamOnSuccess: () => ({ name: 'attendance.recorded', label: 'Attendance recorded', resourceType: 'attendance' }),
    }),
    defineAgentTool({
      name: 'list_my_teaching_assignments',
      event: 'list.my-teaching-assignments',
      description: 'List the subjects and classes the user teaches.',
      schema: z.strictObject({ campusId: campusIdArg }),
      result,
      roles: ['subject_teacher'],
    }),
    defineAgentTool({
      name: 'get_gradebook',
      event: 'get.gradebook',
      description: 'Show the gradebook of a class the user teaches.',
      schema: z.strictObject({ classId: id('class'), subjectId: id('subject').optional() }),
      result,
      roles: ['subject_teacher'],
    }),
    defineAgentTool({
      name: 'list_pending_lesson_plans',
      event: 'list.pending-lesson-plans',
      description: 'List the lesson plans waiting for approval.',
      schema: z.strictObject({ campusId: campusIdArg }),
      result,
      roles: ['dos'],
    }),
    defineAgentTool({
      name: 'approve_lesson_plan',
      event: 'approve.lesson-plan',
      description: 'Approve a lesson plan.',
      schema: z.strictObject({ lessonPlanId: id('lesson plan'), comment: z.string().optional() }),
      result,
      roles: ['dos'],
      modes: ['school'],
      streamOnSuccess: (args) => ({ name: 'lesson-plan.approved', label: 'Lesson plan approved', resourceType: 'lesson_plan', resourceId: args.lessonPlanId }),
    }),
    defineAgentTool({
      name: 'get_branding',
      event: 'get.branding',
      description: 'Show the school branding.',
      schema: z.strictObject({}),
      result,
      shared: true,
    }),
  ];
  return withRegistryProbes(original, probes);
};

/**
 * The contract whose registry is the real tools with no place of their own (no roles, not shared) plus the given
 * probes, which replace a real tool of the same name; placed by the contract's own toolsForMode and toolsForRole.
 * Each specialist's belt is then exactly its probes, whatever lands in the registry.
 */
export const withRegistryProbes = (original: AgentToolsModule, probes: readonly AnyAgentTool[]): AgentToolsModule => {
  const probeNames = new Set(probes.map((probe) => probe.name));
  const registry: AnyAgentTool[] = [
    ...original.RPC_AGENT_TOOLS.filter((definition: AnyAgentTool) => !probeNames.has(definition.name) && !definition.roles?.length && !definition.shared),
    ...probes,
  ];
  const toolsForMode = (mode: AgentRunModeName) => original.toolsForMode(mode, registry);
  const toolsForRole = (role: AgentToolRole, mode: AgentRunModeName) => original.toolsForRole(role, mode, registry);
  return { ...original, RPC_AGENT_TOOLS: registry as unknown as AgentToolsModule['RPC_AGENT_TOOLS'], toolsForMode, toolsForRole };
};
