// Type tests: compiled by `npm run typecheck` (tsc), never executed. Each @ts-expect-error fails the
// build if the illegal posture beneath it ever starts to compile.
import { Action, ActionAuditAction, Resource } from '@naalya/access';
import type { ToolPosture } from './tool-posture.js';

type Department = { id: string };

export const legal: ToolPosture<Department>[] = [
  { auth: 'casl', gate: { action: Action.LIST, resource: Resource.STAFF } },
  { auth: 'casl', gate: { action: Action.CREATE, resource: Resource.DEPARTMENT }, audit: { action: ActionAuditAction.CREATE, resourceType: 'department', resourceId: (result) => result.id } },
  { auth: 'relationship' },
  { auth: 'relationship', scopeNote: 'Your school.' },
  { auth: 'relationship', audit: { action: ActionAuditAction.DELETE, resourceType: 'department' } },
];

// @ts-expect-error auth is required
export const missingAuth: ToolPosture<Department> = { gate: { action: Action.LIST, resource: Resource.STAFF } };

// @ts-expect-error there is no third auth value
export const unknownAuth: ToolPosture<Department> = { auth: 'none' };

// @ts-expect-error a casl posture needs its gate
export const gatelessCasl: ToolPosture<Department> = { auth: 'casl' };

// @ts-expect-error a casl posture describes its scope from the rules, not a note
export const caslWithNote: ToolPosture<Department> = { auth: 'casl', gate: { action: Action.LIST, resource: Resource.STAFF }, scopeNote: 'x' };

// @ts-expect-error a relationship posture has no gate
export const gatedRelationship: ToolPosture<Department> = { auth: 'relationship', gate: { action: Action.LIST, resource: Resource.STAFF } };

export const wrongResourceId: ToolPosture<Department> = {
  auth: 'relationship',
  // @ts-expect-error resourceId must accept the handler's result type
  audit: { action: ActionAuditAction.DELETE, resourceType: 'department', resourceId: (result: string) => result },
};
