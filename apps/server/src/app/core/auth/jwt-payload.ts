import type { UserType } from '@naalya/access';

/** What a signed token carries; tool calls rebuild it from the envelope identity with synthetic iat/exp. */
export type JwtPayload = {
  sub: string;
  type: UserType;
  schoolId: string | null;
  campusId: string | null;
  iat: number;
  exp: number;
};
