import { AbilityBuilder, createMongoAbility } from '@casl/ability';
import { ForbiddenException } from '@nestjs/common';
import { Action, Resource } from '@naalya/access';
import { describe, expect, it } from 'vitest';
import type { AppAbility } from './app-ability.js';
import { campusFilter, campusReach } from './campus-reach.js';

const LIST_STAFF = { action: Action.LIST, resource: Resource.STAFF };

const abilityWith = (define: (can: AbilityBuilder<AppAbility>['can']) => void): AppAbility => {
  const builder = new AbilityBuilder<AppAbility>(createMongoAbility);
  define(builder.can);
  return builder.build();
};

describe('campusReach', () => {
  it('an unconditioned rule reaches the whole school', () => {
    expect(campusReach(abilityWith((can) => can(Action.LIST, Resource.STAFF)), LIST_STAFF)).toEqual({ kind: 'school' });
    expect(campusReach(abilityWith((can) => can(Action.MANAGE, Resource.ALL)), LIST_STAFF)).toEqual({ kind: 'school' });
  });

  it('campus-limited rules reach their campuses only', () => {
    const ability = abilityWith((can) => {
      can(Action.LIST, Resource.STAFF, { campusId: 'kisasi' });
      can(Action.LIST, Resource.STAFF, { campusId: 'ntinda' });
    });
    expect(campusReach(ability, LIST_STAFF)).toEqual({ kind: 'campuses', campusIds: expect.arrayContaining(['kisasi', 'ntinda']) });
  });

  it('no rule reaches nothing, and a filter over nothing is refused', () => {
    const reach = campusReach(abilityWith((can) => can(Action.LIST, Resource.DEPARTMENT)), LIST_STAFF);
    expect(reach).toEqual({ kind: 'none' });
    expect(() => campusFilter(reach, undefined)).toThrow(ForbiddenException);
  });

  it('fails closed on a condition it cannot apply to a query', () => {
    const ability = abilityWith((can) => can(Action.LIST, Resource.STAFF, { departmentId: 'x' }));
    expect(() => campusReach(ability, LIST_STAFF)).toThrow(ForbiddenException);
  });
});

describe('campusFilter', () => {
  it('refuses a requested campus outside the reach', () => {
    expect(() => campusFilter({ kind: 'campuses', campusIds: ['kisasi'] }, 'ntinda')).toThrow('That campus is outside what you may access.');
  });

  it('narrows to the requested campus, or to everything in reach', () => {
    expect(campusFilter({ kind: 'school' }, 'ntinda')).toEqual(['ntinda']);
    expect(campusFilter({ kind: 'school' }, undefined)).toBe('all');
    expect(campusFilter({ kind: 'campuses', campusIds: ['kisasi'] }, undefined)).toEqual(['kisasi']);
  });
});
