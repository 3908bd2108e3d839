/** What an audit row says happened. */
export const ActionAuditAction = {
  CREATE: 'create',
  UPDATE: 'update',
  DELETE: 'delete',
  ADD_MEMBER: 'add_member',
  RECORD: 'record',
  ASSIGN: 'assign',
  APPROVE: 'approve',
} as const;
export type ActionAuditAction = (typeof ActionAuditAction)[keyof typeof ActionAuditAction];

/** The kind of record an audit row points at. */
export const AuditResourceType = {
  DEPARTMENT: 'department',
  DEPARTMENT_MEMBER: 'department_member',
  BRANDING: 'branding',
  ATTENDANCE: 'attendance',
  MARKS: 'marks',
  LESSON_PLAN: 'lesson_plan',
  TEACHING_ASSIGNMENT: 'teaching_assignment',
  /** A school's data choice (which language models may see its data) and its daily token budget. */
  MODEL_POLICY: 'model_policy',
  /** A school's own settings (its time zone). */
  SCHOOL: 'school',
} as const;
export type AuditResourceType = (typeof AuditResourceType)[keyof typeof AuditResourceType];

/** Where a write came from: the REST API, Rover's tool call, or a tool call through the MCP door. */
export const AuditSource = { HTTP: 'http', AGENT: 'agent', MCP: 'mcp' } as const;
export type AuditSource = (typeof AuditSource)[keyof typeof AuditSource];
