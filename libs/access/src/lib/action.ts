/** Permission verbs; `manage` matches every action (CASL convention). */
export const Action = {
  MANAGE: 'manage',
  LIST: 'list',
  READ: 'read',
  CREATE: 'create',
  UPDATE: 'update',
  DELETE: 'delete',
  ASSIGN: 'assign',
  APPROVE: 'approve',
} as const;
export type Action = (typeof Action)[keyof typeof Action];
export const ACTIONS = Object.values(Action) as [Action, ...Action[]];
