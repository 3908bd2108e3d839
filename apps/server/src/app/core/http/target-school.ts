import { BadRequestException, NotFoundException } from '@nestjs/common';
import type { AuthenticatedRequest } from '../auth/jwt-auth.guard.js';
import { currentManager, currentSchoolId } from '../tenancy/tenant-context.js';

/** A platform admin names the school a REST write acts in with this header; the interceptor refuses it from anyone else. */
export const TARGET_SCHOOL_HEADER = 'x-naalya-target-school';

export const MALFORMED_TARGET_SCHOOL_ERROR = `The ${TARGET_SCHOOL_HEADER} header must be a school id (a UUID).`;
export const UNKNOWN_TARGET_SCHOOL_ERROR = `No school has the id given in the ${TARGET_SCHOOL_HEADER} header.`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const targetSchoolOf = (request: AuthenticatedRequest): string | undefined => {
  const value = request.headers[TARGET_SCHOOL_HEADER];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
};

/** Checked before the frame is opened: the id becomes a uuid setting that every RLS policy casts, a 500 if malformed. */
export const assertWellFormedTargetSchool = (schoolId: string): void => {
  if (!UUID.test(schoolId)) throw new BadRequestException(MALFORMED_TARGET_SCHOOL_ERROR);
};

/** Inside the frame pinned to the target school: that school's own row is visible there exactly when it exists. */
export const assertTargetSchoolExists = async (): Promise<void> => {
  const rows = (await currentManager().query(`SELECT 1 FROM schools WHERE id = $1`, [currentSchoolId()])) as unknown[];
  if (rows.length === 0) throw new NotFoundException(UNKNOWN_TARGET_SCHOOL_ERROR);
};
