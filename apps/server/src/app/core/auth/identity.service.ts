import { ForbiddenException, Injectable } from '@nestjs/common';
import { HTTP_ERROR_SENTENCES } from '@naalya/access';
import type { PermissionRow } from '../authorization/app-ability.factory.js';
import { withCode } from '../http/error-code.js';
import { UserEntity } from '../identity/user.entity.js';
import { currentManager, repo } from '../tenancy/tenant-context.js';
import type { JwtPayload } from './jwt-payload.js';

export const IDENTITY_REFUSED_ERROR = HTTP_ERROR_SENTENCES.IDENTITY_REFUSED;

const identityRefused = () => withCode('IDENTITY_REFUSED', new ForbiddenException(IDENTITY_REFUSED_ERROR));

type IdentityFacts = { isActive: boolean; userType: string; schoolId: string | null; campusId: string | null };

const isCurrent = (user: IdentityFacts | undefined, jwt: JwtPayload): boolean =>
  !!user &&
  user.isActive &&
  user.userType === jwt.type &&
  user.schoolId === (jwt.schoolId ?? null) &&
  user.campusId === (jwt.campusId ?? null);

/**
 * The caller's row and, in the same statement, the permission rows of their roles (role_permissions joined to
 * user_x_roles by user), under row-level security, in the caller's transaction and snapshot. The only query that
 * loads permissions: REST requests, tool calls and minted run contexts all build their ability from it.
 */
const CURRENT_USER_WITH_PERMISSIONS = `
  SELECT u.is_active AS "isActive", u.user_type AS "userType", u.school_id AS "schoolId", u.campus_id AS "campusId",
         (SELECT COALESCE(json_agg(json_build_object('action', p.action, 'resource', p.resource, 'conditions', p.conditions)), '[]'::json)
            FROM role_permissions p INNER JOIN user_x_roles ur ON ur.role_id = p.role_id
           WHERE ur.user_id = u.id) AS permissions
    FROM users u
   WHERE u.id = $1`;

/**
 * Tokens and envelopes can outlive the facts they carry. Inside the unit of work the caller is
 * reloaded by `sub`; deactivated, moved or retyped users are refused (fail closed).
 */
@Injectable()
export class IdentityService {
  async assertCurrent(jwt: JwtPayload): Promise<UserEntity> {
    const user = await repo(UserEntity).findOneBy({ id: jwt.sub });
    if (!user || !isCurrent(user, jwt)) throw identityRefused();
    return user;
  }

  /**
   * assertCurrent's check, and the caller's permission rows for AppAbilityFactory.fromPermissions, in one query.
   * Refuses exactly what assertCurrent refuses; the permissions are read fresh on every call, never cached.
   */
  async assertCurrentWithPermissions(jwt: JwtPayload): Promise<PermissionRow[]> {
    const [row] = (await currentManager().query(CURRENT_USER_WITH_PERMISSIONS, [jwt.sub])) as (IdentityFacts & { permissions: PermissionRow[] })[];
    if (!isCurrent(row, jwt)) throw identityRefused();
    return row.permissions;
  }
}
