import { USER_TYPES, type UserType } from '@naalya/access';
import { z } from 'zod';
import { agentCapabilitiesSchema } from './agent-tool-role.js';

const id = z.string().min(1).max(100);

/** The caller as the server loaded it at dispatch. */
export const agentUserDetailsSchema = z.strictObject({
  id,
  userType: z.enum(USER_TYPES),
  schoolId: id.nullable(),
  campusId: id.nullable(),
  fullName: z.string(),
  email: z.string(),
});
export type AgentUserDetails = z.infer<typeof agentUserDetailsSchema>;

/** School mode (a platform admin's writes need the target school minted at dispatch) or campus mode. */
export const agentRunModeSchema = z.discriminatedUnion('mode', [
  z.strictObject({ mode: z.literal('school'), targetSchoolId: id.optional() }),
  z.strictObject({ mode: z.literal('campus'), campus: z.strictObject({ id, name: z.string() }) }),
]);
export type AgentRunMode = z.infer<typeof agentRunModeSchema>;

/** A CASL rule as plain JSON, for display only: the worker never evaluates it. */
export const agentPermissionRuleSchema = z.strictObject({
  action: z.union([z.string(), z.array(z.string())]),
  subject: z.union([z.string(), z.array(z.string())]),
  conditions: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional(),
  inverted: z.boolean().optional(),
});

/** Everything the server minted for one run; the only source of identity and call scope in the worker. */
export const agentRuntimeContextSchema = z.strictObject({
  userDetails: agentUserDetailsSchema,
  runMode: agentRunModeSchema,
  run: z.strictObject({ runId: id, threadId: id }),
  userPermissions: z.array(agentPermissionRuleSchema),
  capabilities: agentCapabilitiesSchema,
  /** The server's signature over what it minted (identity, run mode, run, expiry); the proxy copies it into each call's meta. Opaque here. */
  dispatchToken: z.string().min(1).max(4096).optional(),
});
export type AgentRuntimeContext = z.infer<typeof agentRuntimeContextSchema>;

/** Who is calling, as it crosses the hop. */
export type AgentIdentity = {
  sub: string;
  type: UserType;
  schoolId: string | null;
  campusId: string | null;
};

/** The shared rename from the dispatch's user details to the envelope identity. */
export const identityFromUserDetails = (userDetails: AgentUserDetails): AgentIdentity => ({
  sub: userDetails.id,
  type: userDetails.userType,
  schoolId: userDetails.schoolId,
  campusId: userDetails.campusId,
});
