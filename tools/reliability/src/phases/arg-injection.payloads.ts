import type { AnyAgentTool } from '@naalya/agent-tools';
import { argKeysOf, withOwnKey } from './tool-args.js';

/**
 * Identity and campus injection through a tool's arguments: keys a model might add to claim to be someone else, act
 * in another school or campus, or reach the prototype. The identity of a call comes only from the envelope the server
 * minted; a strict schema refuses every key it does not publish, so each of these must come back as an
 * "Invalid tool arguments" error naming the key, with nothing run.
 */
export type InjectionValues = {
  otherSchoolId: string;
  otherSchoolAdminId: string;
  platformAdminId: string;
  sameSchoolOtherUserId: string;
  otherSchoolCampusId: string;
};

export const INJECTION_KEYS = [
  'userId',
  'schoolId',
  'campusId',
  'role',
  'roles',
  'identity',
  'scope',
  'sub',
  'type',
  'userType',
  'targetSchoolId',
  'actorId',
  'tenantId',
  'ownerId',
  'isAdmin',
  'permissions',
  'school',
  'user',
  '__proto__',
  'constructor',
  'prototype',
  'meta',
] as const;

/** Two values per key: the first names another school or user outright, the second smuggles it in a structure. */
const valuesFor = (key: (typeof INJECTION_KEYS)[number], v: InjectionValues): [unknown, unknown] => {
  switch (key) {
    case 'userId':
    case 'sub':
    case 'actorId':
    case 'ownerId':
      return [v.otherSchoolAdminId, v.platformAdminId];
    case 'schoolId':
    case 'targetSchoolId':
    case 'tenantId':
      return [v.otherSchoolId, [v.otherSchoolId]];
    case 'campusId':
      return [v.otherSchoolCampusId, { id: v.otherSchoolCampusId }];
    case 'role':
    case 'roles':
    case 'type':
    case 'userType':
      return ['platform_admin', ['School administrator', 'platform_admin']];
    case 'identity':
    case 'user':
      return [
        { sub: v.platformAdminId, type: 'platform_admin', schoolId: null, campusId: null },
        { sub: v.sameSchoolOtherUserId, type: 'staff', schoolId: v.otherSchoolId, campusId: null },
      ];
    case 'scope':
      return [{ mode: 'school', targetSchoolId: v.otherSchoolId }, { mode: 'campus', campusId: v.otherSchoolCampusId }];
    case 'isAdmin':
      return [true, 'true'];
    case 'permissions':
      return [[{ action: 'manage', resource: 'all' }], { manage: 'all' }];
    case 'school':
      return [v.otherSchoolId, { id: v.otherSchoolId }];
    case '__proto__':
    case 'prototype':
      return [{ isActive: true, type: 'platform_admin', schoolId: v.otherSchoolId }, { polluted: 'yes' }];
    case 'constructor':
      return [{ prototype: { type: 'platform_admin' } }, { name: 'Object' }];
    case 'meta':
      return [{ dispatchToken: 'v1.e30.AAAA' }, { callId: 'x'.repeat(16) }];
  }
};

export type Injection = { tool: AnyAgentTool; key: string; where: string; args: Record<string, unknown> };

/** The first array of objects in a tool's template arguments, where a key can also be smuggled one level down. */
const nestedTarget = (args: Record<string, unknown>): string | undefined =>
  Object.keys(args).find((key) => Array.isArray(args[key]) && typeof (args[key] as unknown[])[0] === 'object');

/**
 * Every injection for one tool: each key it does not publish (a campus-scoped tool publishes campusId, so campus
 * injection there is the cross-campus phase's business) with both its values at the top level, and the identity keys
 * again inside the first element of an array argument when the tool has one.
 */
export const injectionsFor = (tool: AnyAgentTool, template: Record<string, unknown>, values: InjectionValues): Injection[] => {
  const published = new Set(argKeysOf(tool));
  const injections: Injection[] = [];
  for (const key of INJECTION_KEYS.filter((candidate) => !published.has(candidate))) {
    for (const value of valuesFor(key, values)) injections.push({ tool, key, where: 'args', args: withOwnKey(template, key, value) });
  }
  const array = nestedTarget(template);
  if (array) {
    for (const key of ['userId', 'schoolId', 'campusId', 'identity', '__proto__'] as const) {
      const [first, ...rest] = template[array] as Record<string, unknown>[];
      injections.push({ tool, key, where: `${array}[0]`, args: { ...template, [array]: [withOwnKey(first ?? {}, key, valuesFor(key, values)[0]), ...rest] } });
    }
  }
  return injections;
};
