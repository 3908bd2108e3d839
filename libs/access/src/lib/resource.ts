/** Permission subjects; `all` matches every resource (CASL convention). */
export const Resource = {
  ALL: 'all',
  SCHOOL: 'School',
  CAMPUS: 'Campus',
  STAFF: 'Staff',
  DEPARTMENT: 'Department',
  AUDIT_LOG: 'AuditLog',
  BRANDING: 'Branding',
  CLASS: 'Class',
  STUDENT: 'Student',
  SUBJECT: 'Subject',
  TEACHING_ASSIGNMENT: 'TeachingAssignment',
  LESSON_PLAN: 'LessonPlan',
  RESULT: 'Result',
} as const;
export type Resource = (typeof Resource)[keyof typeof Resource];
export const RESOURCES = Object.values(Resource) as [Resource, ...Resource[]];
