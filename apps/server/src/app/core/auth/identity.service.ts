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
 * The caller's row and, in the same statement, the permission rows of their roles (caller_with_permissions, migration
 * 1764662400020), under row-level security, in the caller's transaction and snapshot. The only read of permissions:
 * REST requests and minted run contexts run it; a tool call gets the same row from open_tool_call.
 */
const CURRENT_USER_WITH_PERMISSIONS = `SELECT "isActive", "userType", "schoolId", "campusId", permissions FROM caller_with_permissions($1)`;

/** What caller_with_permissions returns for one user (nothing for a user this unit of work cannot see). */
export type CallerWithPermissions = IdentityFacts & { permissions: PermissionRow[] };

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
    const [row] = (await currentManager().query(CURRENT_USER_WITH_PERMISSIONS, [jwt.sub])) as CallerWithPermissions[];
    return this.permissionsIfCurrent(row, jwt);
  }

  /** The same check on a caller read by another statement of this unit of work (a tool call's open_tool_call). */
  permissionsIfCurrent(row: CallerWithPermissions | undefined, jwt: JwtPayload): PermissionRow[] {
    if (!row || !isCurrent(row, jwt)) throw identityRefused();
    return row.permissions;
  }
}
