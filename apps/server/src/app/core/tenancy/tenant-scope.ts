import { ForbiddenException } from '@nestjs/common';
import { HTTP_ERROR_SENTENCES, UserType } from '@naalya/access';
import type { JwtPayload } from '../auth/jwt-payload.js';
import { runUnscoped, withSchool, type PinnedRows, type PinningRead } from './tenant-context.js';

export const NO_TENANT_SCOPE_ERROR = HTTP_ERROR_SENTENCES.NO_TENANT_SCOPE;
export const PLATFORM_WRITE_NEEDS_SCHOOL_ERROR = HTTP_ERROR_SENTENCES.PLATFORM_WRITE_NEEDS_SCHOOL;

/** A non-platform user with no school cannot be pinned to a tenant: fail closed. */
export const hasNoTenantScope = (jwt: JwtPayload): boolean => jwt.type !== UserType.PLATFORM_ADMIN && !jwt.schoolId;

/**
 * The identity a unit of work runs as. A platform admin acting in a target school chosen by the server
 * (never by the model) is pinned to that school; anyone else naming a target school is refused.
 */
export const tenantJwtFor = (jwt: JwtPayload, targetSchoolId: string | undefined): JwtPayload => {
  if (!targetSchoolId) return jwt;
  if (jwt.type !== UserType.PLATFORM_ADMIN) throw new ForbiddenException('Only platform administrators choose a target school.');
  return { ...jwt, schoolId: targetSchoolId };
};

/**
 * The one definition of the tenant frame, shared by the ability rebuild and the service call. Platform
 * admins without a target school run unscoped (read-only under RLS); everyone else is pinned to their school.
 */
export const inTenantScope = <T>(jwt: JwtPayload, fn: (pinned: PinnedRows) => Promise<T>, read?: PinningRead): Promise<T> =>
  jwt.type === UserType.PLATFORM_ADMIN && !jwt.schoolId
    ? runUnscoped(jwt.sub, fn, read)
    : withSchool(jwt.schoolId as string, jwt.sub, fn, read);
