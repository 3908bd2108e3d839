/** Permission subjects; `all` matches every resource (CASL convention). */
export const Resource = {
  ALL: 'all',
  SCHOOL: 'School',
  CAMPUS: 'Campus',
  STAFF: 'Staff',
  DEPARTMENT: 'Department',
  AUDIT_LOG: 'AuditLog',
} as const;
export type Resource = (typeof Resource)[keyof typeof Resource];
export const RESOURCES = Object.values(Resource) as [Resource, ...Resource[]];
