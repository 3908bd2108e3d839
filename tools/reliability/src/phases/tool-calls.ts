import type { AnyAgentTool } from '@naalya/agent-tools';
import type { PersonaKey, SchoolWorld } from './seeded-world.js';

/** A call as its rightful caller would make it on rows of their own school: what an attack then changes one thing of. */
export type CallTemplate = { persona: PersonaKey; args: Record<string, unknown> };

/**
 * The person each tool is for, with arguments naming their own rows, so that a refusal of the attacked variant can
 * only come from what the attack changed. `unique` makes names and dates of writes distinct per call.
 */
const TEMPLATES: Record<string, (school: SchoolWorld, unique: string) => CallTemplate> = {
  list_staff: () => ({ persona: 'schoolAdmin', args: {} }),
  list_departments: () => ({ persona: 'schoolAdmin', args: {} }),
  create_department: (school, unique) => ({ persona: 'schoolAdmin', args: { name: `Rel ${unique}`, campusId: school.campuses[0]?.id } }),
  delete_department: (school) => ({ persona: 'schoolAdmin', args: { departmentId: school.pools.department[0] } }),
  add_department_member: (school) => ({
    persona: 'schoolAdmin',
    args: { departmentId: school.pools.department[0], staffId: school.personas.teacher.id, asHead: false },
  }),
  get_school_branding: () => ({ persona: 'teacher', args: {} }),
  update_school_branding: (_, unique) => ({ persona: 'schoolAdmin', args: { motto: `Rel ${unique}` } }),
  list_campuses: () => ({ persona: 'teacher', args: {} }),
  list_subjects: () => ({ persona: 'teacher', args: {} }),
  list_my_classes: () => ({ persona: 'classTeacher', args: {} }),
  list_class_students: (school) => ({ persona: 'classTeacher', args: { classId: school.homeClass.id } }),
  record_attendance: (school) => ({
    persona: 'classTeacher',
    args: { classId: school.homeClass.id, date: '2026-03-12', entries: school.homeClass.studentIds.slice(0, 3).map((studentId) => ({ studentId, status: 'present' })) },
  }),
  list_my_teaching_assignments: () => ({ persona: 'subjectTeacher', args: {} }),
  get_gradebook: (school) => ({ persona: 'subjectTeacher', args: { classId: school.taught.classId, subjectId: school.taught.subjectId, termId: school.currentTermId } }),
  record_marks: (school) => ({
    persona: 'subjectTeacher',
    args: {
      classId: school.taught.classId,
      subjectId: school.taught.subjectId,
      termId: school.currentTermId,
      marks: school.taught.studentIds.slice(0, 3).map((studentId, index) => ({ studentId, score: 50 + index })),
    },
  }),
  get_results_summary: (school) => ({ persona: 'directorOfStudies', args: { termId: school.currentTermId } }),
  create_lesson_plan: (school, unique) => ({
    persona: 'subjectTeacher',
    args: { teachingAssignmentId: school.taught.id, title: `Rel ${unique}`, weekOf: '2026-03-30', objectives: 'Learners can simplify ratios.' },
  }),
  list_lesson_plans: () => ({ persona: 'subjectTeacher', args: {} }),
  list_pending_lesson_plans: () => ({ persona: 'directorOfStudies', args: {} }),
  approve_lesson_plan: (school) => ({ persona: 'directorOfStudies', args: { lessonPlanId: school.pools.lessonPlan[0] } }),
  assign_subject_teacher: (school) => ({
    persona: 'directorOfStudies',
    args: { classId: school.taught.classId, subjectId: school.taught.subjectId, staffId: school.personas.subjectTeacher.id },
  }),
  get_tool_call_outcome: (school) => ({ persona: 'schoolAdmin', args: { callId: school.pools.call[0] ?? 'no-call-recorded-yet' } }),
};

/** The tools without a template: the coverage tests list them, so a new tool cannot slip past the attacks. */
export const toolsWithoutTemplate = (tools: readonly AnyAgentTool[]): string[] => tools.map((tool) => tool.name).filter((name) => !TEMPLATES[name]);

export const templateFor = (tool: AnyAgentTool, school: SchoolWorld, unique: string): CallTemplate => {
  const template = TEMPLATES[tool.name];
  if (!template) throw new Error(`No call template for ${tool.name}: add one to tool-calls.ts.`);
  return template(school, unique);
};
