import { AbilityBuilder, createMongoAbility } from '@casl/ability';
import { Injectable } from '@nestjs/common';
import { Action, Resource, UserType } from '@naalya/access';
import { RolePermissionEntity, type PermissionConditions } from '../../roles/role-permission.entity.js';
import { UserRoleEntity } from '../../roles/user-role.entity.js';
import type { JwtPayload } from '../auth/jwt-payload.js';
import { currentManager } from '../tenancy/tenant-context.js';
import type { AppAbility } from './app-ability.js';

const PLACEHOLDERS: Record<string, (jwt: JwtPayload) => string | null> = {
  '${user.id}': (jwt) => jwt.sub,
  '${user.campusId}': (jwt) => jwt.campusId,
};

/** What an ability is built from: one permission row of one of the caller's roles. */
export type PermissionRow = Pick<RolePermissionEntity, 'action' | 'resource' | 'conditions'>;

/**
 * Builds the caller's ability from their roles' permission rows. It reads tenant tables, so it must run
 * inside the caller's unit of work; it is rebuilt on every call, never cached across calls.
 */
@Injectable()
export class AppAbilityFactory {
  async createForUser(jwt: JwtPayload): Promise<AppAbility> {
    if (jwt.type === UserType.PLATFORM_ADMIN) return this.fromPermissions(jwt, []);
    const permissions = await currentManager()
      .createQueryBuilder(RolePermissionEntity, 'permission')
      .innerJoin(UserRoleEntity, 'userRole', 'userRole.role_id = permission.role_id')
      .where('userRole.user_id = :userId', { userId: jwt.sub })
      .getMany();
    return this.fromPermissions(jwt, permissions);
  }

  /** The ability of these permission rows, read in this call's unit of work (IdentityService.assertCurrentWithPermissions). */
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
