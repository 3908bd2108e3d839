import type { AuditSource } from './audit.js';
import type { UserType } from './user-type.js';

/** POST /auth/login. */
export type LoginResponse = { accessToken: string; expiresIn: number };

/** Each row of GET /campuses: the campuses the caller may see. */
export type CampusSummary = { id: string; name: string };

/** GET /auth/me: who the caller is, for display only; it grants nothing. */
export type CallerProfile = {
  id: string;
  fullName: string;
  email: string;
  userType: UserType;
  schoolId: string | null;
  schoolName: string | null;
  campusId: string | null;
  campusName: string | null;
  roles: string[];
};

/** One row of GET /audit-log, the caller's school's activity. */
export type AuditLogRow = {
  id: string;
  createdAt: string;
  actorId: string;
  actorName: string | null;
  actorType: string;
  action: string;
  resourceType: string;
  resourceId: string | null;
  source: AuditSource;
  callId: string | null;
};
