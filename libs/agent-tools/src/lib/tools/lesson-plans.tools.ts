import { z } from 'zod';
import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

const lessonPlanId = z.guid().describe('The id of the lesson plan.');
const LESSON_PLAN_STATUSES = ['pending', 'approved', 'rejected'] as const;

/** One lesson plan as it is stored: what writing or approving it returns. */
const lessonPlan = z.strictObject({
  id: resultId('lesson_plan'),
  schoolId: resultId('school'),
  teachingAssignmentId: resultId('teaching_assignment'),
  title: resultName(),
  weekOf: z.iso.date(),
  objectives: z.string(),
  status: z.enum(LESSON_PLAN_STATUSES),
  createdBy: resultId('user'),
  reviewedBy: resultId('user').nullable(),
  reviewedAt: z.iso.datetime().nullable(),
  reviewComment: z.string().nullable(),
  createdAt: z.iso.datetime(),
});

/** A lesson plan in a list: named by its subject, class and teacher rather than their ids. */
const lessonPlanSummaries = z.array(
  z.strictObject({
    id: resultId('lesson_plan'),
    title: resultName(),
    weekOf: z.iso.date(),
    status: z.enum(LESSON_PLAN_STATUSES),
    subjectName: z.string(),
    className: z.string(),
    campusId: resultId('campus'),
    teacherName: z.string(),
  }),
);

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
  result: lessonPlan,
  roles: ['subject_teacher'],
  streamOnSuccess: (args) => ({ name: 'lesson-plan.created', label: `Lesson plan "${args.title}" submitted`, resourceType: 'lesson_plan' }),
});

export const listLessonPlansTool = defineAgentTool({
  name: 'list_lesson_plans',
  event: 'list.lesson-plans',
  description: "List the user's own lesson plans and their review status.",
  schema: z.strictObject({ status: z.enum(LESSON_PLAN_STATUSES).optional() }),
  result: lessonPlanSummaries,
  roles: ['subject_teacher'],
});

export const listPendingLessonPlansTool = defineAgentTool({
  name: 'list_pending_lesson_plans',
  event: 'list.pending-lesson-plans',
  description: 'List lesson plans waiting for review.',
  schema: z.strictObject({ campusId: campusIdArg }),
  result: lessonPlanSummaries,
  roles: ['dos'],
  campusScoped: true,
});

export const approveLessonPlanTool = defineAgentTool({
  name: 'approve_lesson_plan',
  event: 'approve.lesson-plan',
  description: 'Approve a lesson plan waiting for review. Nobody approves their own plan.',
  schema: z.strictObject({ lessonPlanId, comment: z.string().trim().max(500).optional(), campusId: campusIdArg }),
  result: lessonPlan,
  roles: ['dos'],
  campusScoped: true,
  confirm: { editable: ['comment'] },
  streamOnSuccess: (args) => ({
    name: 'lesson-plan.approved',
    label: 'Lesson plan approved',
    resourceType: 'lesson_plan',
    resourceId: args.lessonPlanId,
  }),
});
