import { z } from 'zod';
import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';

const lessonPlanId = z.guid().describe('The id of the lesson plan.');

export const createLessonPlanTool = defineAgentTool({
  name: 'create_lesson_plan',
  event: 'create.lesson-plan',
  description: "Write a lesson plan for one of the user's teaching assignments; it waits for a director of studies to review it.",
  schema: z.strictObject({
    teachingAssignmentId: z.guid().describe('The teaching assignment, as list_my_teaching_assignments returns it.'),
    title: z.string().trim().min(3).max(120),
    weekOf: z.iso.date().describe('The Monday of the week it covers, as YYYY-MM-DD.'),
    objectives: z.string().trim().min(10).max(2_000).describe('What learners will be able to do by the end.'),
  }),
  roles: ['subject_teacher'],
  streamOnSuccess: (args) => ({ name: 'lesson-plan.created', label: `Lesson plan "${args.title}" submitted`, resourceType: 'lesson_plan' }),
});

export const listLessonPlansTool = defineAgentTool({
  name: 'list_lesson_plans',
  event: 'list.lesson-plans',
  description: "List the user's own lesson plans and their review status.",
  schema: z.strictObject({ status: z.enum(['pending', 'approved', 'rejected']).optional() }),
  roles: ['subject_teacher'],
});

export const listPendingLessonPlansTool = defineAgentTool({
  name: 'list_pending_lesson_plans',
  event: 'list.pending-lesson-plans',
  description: 'List lesson plans waiting for review.',
  schema: z.strictObject({ campusId: campusIdArg }),
  roles: ['dos'],
  campusScoped: true,
});

export const approveLessonPlanTool = defineAgentTool({
  name: 'approve_lesson_plan',
  event: 'approve.lesson-plan',
  description: 'Approve a lesson plan waiting for review. Nobody approves their own plan.',
  schema: z.strictObject({ lessonPlanId, comment: z.string().trim().max(500).optional(), campusId: campusIdArg }),
  roles: ['dos'],
  campusScoped: true,
  confirm: (args) =>
    `Approve the lesson plan with id ${args.lessonPlanId}${args.comment ? ` with the comment "${args.comment}"` : ''}? Its teacher will see it as approved.`,
  streamOnSuccess: (args) => ({
    name: 'lesson-plan.approved',
    label: 'Lesson plan approved',
    resourceType: 'lesson_plan',
    resourceId: args.lessonPlanId,
  }),
});
