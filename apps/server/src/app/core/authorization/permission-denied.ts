import { Action, Resource } from '@naalya/access';
import type { PermissionGate } from './app-ability.js';

const NOUNS: Record<Resource, string> = {
  [Resource.ALL]: 'everything',
  [Resource.SCHOOL]: 'schools',
  [Resource.CAMPUS]: 'campuses',
  [Resource.STAFF]: 'staff',
  [Resource.DEPARTMENT]: 'departments',
  [Resource.AUDIT_LOG]: 'the activity log',
  [Resource.BRANDING]: 'the school branding',
  [Resource.CLASS]: 'classes',
  [Resource.STUDENT]: 'students',
  [Resource.SUBJECT]: 'subjects',
  [Resource.TEACHING_ASSIGNMENT]: 'teaching assignments',
  [Resource.LESSON_PLAN]: 'lesson plans',
  [Resource.RESULT]: 'results',
};

const VERBS: Record<Action, string> = {
  [Action.MANAGE]: 'manage',
  [Action.LIST]: 'list',
  [Action.READ]: 'view',
  [Action.CREATE]: 'create',
  [Action.UPDATE]: 'change',
  [Action.DELETE]: 'delete',
  [Action.ASSIGN]: 'assign',
  [Action.APPROVE]: 'approve',
};

/** The same sentence for a denied REST route and a denied tool call. */
export const permissionDeniedMessage = ({ action, resource }: PermissionGate): string =>
  `You do not have permission to ${VERBS[action]} ${NOUNS[resource]}.`;
