import type { AuditSource } from './audit.js';
import type { UserType } from './user-type.js';

/** POST /auth/login. */
export type LoginResponse = { accessToken: string; expiresIn: number };

/** Each row of GET /campuses: the campuses the caller may see. */
export type CampusSummary = { id: string; name: string };

/** Each row of GET /schools (platform administrators: the schools they may act in), and what PATCH /school returns. */
export type SchoolSummary = { id: string; name: string; timeZone: string };

/** GET /auth/me: who the caller is, for display only; it grants nothing. */
export type CallerProfile = {
  id: string;
  fullName: string;
  email: string;
  userType: UserType;
  schoolId: string | null;
  schoolName: string | null;
  /** The school's IANA time zone, in which the Hub shows dates; null for a platform administrator (see SchoolSummary). */
  schoolTimeZone: string | null;
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
  /** The agent tool that wrote it (agent writes), or null. */
  tool: string | null;
  /** The REST route that wrote it, "POST /departments" (REST writes), or null. */
  route: string | null;
  /** The agent run a tool write came from, or null. */
  runId: string | null;
  /** The resource's display name when it was written (kept after the resource is gone), or null. */
  resourceName: string | null;
};

/** One audit row in full (GET /audit-log/:id): what changed, and the trace it can be followed to. */
export type AuditLogDetail = AuditLogRow & {
  /** The validated arguments or body, bounded and without secrets. */
  changes: Record<string, unknown> | null;
  traceId: string | null;
  /** The chat thread of the run the write came from, when that run is the caller's own; otherwise null. */
  threadId: string | null;
  /** The model tokens that whole run used, when it is the caller's own and reported any; otherwise null. */
  tokenUsage: { input: number; output: number } | null;
  /** The person's approval of a confirmed agent write (an approval-gated tool), or null for every other write. */
  approval: AuditApproval | null;
};

/** Who approved a confirmed write, when, and whether they edited the model's arguments first (and how). */
export type AuditApproval = {
  id: string;
  approvedById: string;
  approvedByName: string | null;
  approvedAt: string;
  /** The answer they gave ("yes", "approve", ...). */
  answer: string;
  edited: boolean;
  /** Each argument they changed: the model's value and theirs (null: not set); empty when not edited. */
  edits: { field: string; from: unknown; to: unknown }[];
};

/** One row of GET /mcp-tokens: a connected app, a live token the caller issued for the MCP door (never the token itself). */
export type ConnectedApp = {
  id: string;
  name: string;
  /** The door's URL the token is for. */
  audience: string;
  /** The campus mode chosen at creation; null: the whole school. */
  campusId: string | null;
  createdAt: string;
  expiresAt: string;
  lastUsedAt: string | null;
};

/** POST /mcp-tokens: the new connected app and its token, shown this once (only its hash is stored). */
export type ConnectedAppCreated = ConnectedApp & { token: string };
