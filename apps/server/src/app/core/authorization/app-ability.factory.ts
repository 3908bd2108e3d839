import { AbilityBuilder, createMongoAbility } from '@casl/ability';
import { Injectable } from '@nestjs/common';
import { Action, Resource, UserType } from '@naalya/access';
import type { PermissionConditions, RolePermissionEntity } from '../identity/role-permission.entity.js';
import type { JwtPayload } from '../auth/jwt-payload.js';
import type { AppAbility } from './app-ability.js';

const PLACEHOLDERS: Record<string, (jwt: JwtPayload) => string | null> = {
  '${user.id}': (jwt) => jwt.sub,
  '${user.campusId}': (jwt) => jwt.campusId,
};

/** What an ability is built from: one permission row of one of the caller's roles. */
export type PermissionRow = Pick<RolePermissionEntity, 'action' | 'resource' | 'conditions'>;

/**
 * Builds the caller's ability from their roles' permission rows, which IdentityService.assertCurrentWithPermissions
 * reads (the one query that loads permissions) in the caller's unit of work; rebuilt on every call, never cached.
 */
@Injectable()
export class AppAbilityFactory {
  /** The ability of these permission rows, read in this call's unit of work. */
  fromPermissions(jwt: JwtPayload, permissions: readonly PermissionRow[]): AppAbility {
    const { can, build } = new AbilityBuilder<AppAbility>(createMongoAbility);
    if (jwt.type === UserType.PLATFORM_ADMIN) {
      can(Action.MANAGE, Resource.ALL);
      return build();
    }
    for (const permission of permissions) {
      const conditions = this.interpolate(permission.conditions, jwt);
      // A condition on the caller's campus for a caller with no campus can never match: grant nothing.
      if (conditions === undefined) continue;
      if (conditions) can(permission.action, permission.resource, conditions);
      else can(permission.action, permission.resource);
    }
    return build();
  }

  private interpolate(conditions: PermissionConditions | null, jwt: JwtPayload): Record<string, string> | null | undefined {
    if (!conditions) return null;
    const resolved: Record<string, string> = {};
    for (const [field, template] of Object.entries(conditions)) {
      const value = template in PLACEHOLDERS ? PLACEHOLDERS[template](jwt) : template;
      if (value === null) return undefined;
      resolved[field] = value;
    }
    return resolved;
  }
}
