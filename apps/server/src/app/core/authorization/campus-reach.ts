import { ForbiddenException } from '@nestjs/common';
import { rulesToCondition } from '@casl/ability/extra';
import type { AppAbility, PermissionGate } from './app-ability.js';

/** How far a caller's rules for one gate reach: the whole school, some campuses, or nothing. */
export type CampusReach = { kind: 'school' } | { kind: 'campuses'; campusIds: string[] } | { kind: 'none' };

type Condition = { $or?: Condition[]; $and?: Condition[]; $not?: unknown; [field: string]: unknown };

/**
 * `ability.can(action, 'Type')` passes when any rule allows some instance, so a campus-limited rule must
 * also narrow the query. Only `campusId` conditions are understood; anything else fails closed.
 */
export const campusReach = (ability: AppAbility, { action, resource }: PermissionGate): CampusReach => {
  const condition = rulesToCondition(
    ability.rulesFor(action, resource),
    (rule): Condition => (rule.inverted ? { $not: rule.conditions ?? {} } : ((rule.conditions ?? {}) as Condition)),
    {
      and: (conditions) => ({ $and: conditions }),
      or: (conditions) => ({ $or: conditions }),
      empty: () => ({}),
    },
  ) as Condition | null;
  if (condition === null) return { kind: 'none' };
  return reachOf(condition);
};

const reachOf = (condition: Condition): CampusReach => {
  if (condition.$or) {
    const reaches = condition.$or.map(reachOf);
    if (reaches.some((reach) => reach.kind === 'school')) return { kind: 'school' };
    const campusIds = reaches.flatMap((reach) => (reach.kind === 'campuses' ? reach.campusIds : []));
    return campusIds.length ? { kind: 'campuses', campusIds: [...new Set(campusIds)] } : { kind: 'none' };
  }
  const keys = Object.keys(condition);
  if (keys.length === 0) return { kind: 'school' };
  if (keys.length === 1 && typeof (condition as Record<string, unknown>)['campusId'] === 'string') {
    return { kind: 'campuses', campusIds: [(condition as Record<string, string>)['campusId']] };
  }
  throw new ForbiddenException('These permissions use a condition this action cannot apply.');
};

/**
 * The campuses a query may cover: a requested campus must be within reach (the caller already proved it
 * belongs to the school); without one, the query covers everything in reach.
 */
export const campusFilter = (reach: CampusReach, requestedCampusId: string | undefined): string[] | 'all' => {
  if (reach.kind === 'none') throw new ForbiddenException('You do not have permission to do that.');
  if (requestedCampusId) {
    if (reach.kind === 'campuses' && !reach.campusIds.includes(requestedCampusId)) {
      throw new ForbiddenException('That campus is outside what you may access.');
    }
    return [requestedCampusId];
  }
  return reach.kind === 'school' ? 'all' : reach.campusIds;
};

/**
 * For an action on something of the whole school (its branding): a campus-limited rule allows it on things of its
 * campus, and a school-wide object is on no one campus, so only rules that reach the whole school allow the action.
 * Without this, `ability.can(action, 'Type')` would let a campus-limited rule change what every campus shares.
 */
export const assertSchoolWideReach = (ability: AppAbility, gate: PermissionGate): void => {
  const reach = campusReach(ability, gate);
  if (reach.kind === 'none') throw new ForbiddenException('You do not have permission to do that.');
  if (reach.kind === 'campuses') throw new ForbiddenException('This belongs to the whole school, and your permission covers only some campuses.');
};
