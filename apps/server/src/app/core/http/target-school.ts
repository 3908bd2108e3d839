import type { AuthenticatedRequest } from '../auth/jwt-auth.guard.js';

/** A platform admin names the school a REST write acts in with this header; the interceptor refuses it from anyone else. */
export const TARGET_SCHOOL_HEADER = 'x-naalya-target-school';

export const targetSchoolOf = (request: AuthenticatedRequest): string | undefined => {
  const value = request.headers[TARGET_SCHOOL_HEADER];
  return typeof value === 'string' && value.length > 0 ? value : undefined;
};
