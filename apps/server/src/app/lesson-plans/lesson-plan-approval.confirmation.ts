import { calendarDateCopy } from '../core/copy/copy-dates.js';
import type { LessonPlanSummary } from './lesson-plan.service.js';

/** The question a director of studies answers before approve_lesson_plan runs, from the plan as they may see it. */
export const lessonPlanApprovalQuestion = (plan: LessonPlanSummary, comment: string | undefined): string =>
  `Approve "${plan.title}", ${plan.teacherName}'s ${plan.subjectName} plan for ${plan.className}, week of ${calendarDateCopy(plan.weekOf)}?` +
  (comment ? ` Your comment goes with it: "${comment}".` : '') +
  ` It is ${plan.status}; it becomes approved and ${plan.teacherName} sees it.`;
