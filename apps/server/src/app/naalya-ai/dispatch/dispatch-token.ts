import { createHmac, timingSafeEqual } from 'node:crypto';
import { USER_TYPES } from '@naalya/access';
import type { AgentCallScope, AgentIdentity } from '@naalya/agent-tools';
import { z } from 'zod';

/**
 * What the server minted at dispatch, signed so that a tool call can prove it: the caller, the run mode (as the
 * call scope it pins), the run and its thread, and an expiry. Format: `v1.<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`.
 * The worker treats it as opaque; only the server holds DISPATCH_SIGNING_KEY.
 */
export type DispatchClaims = {
  identity: AgentIdentity;
  scope: AgentCallScope;
  runId: string;
  threadId: string;
  /** The run's dispatch epoch: a token of an older epoch (the step was dispatched again, or cancelled) is refused. */
  epoch: number;
  /** Epoch seconds. */
  exp: number;
};

export type DispatchTokenRefusal = 'missing' | 'malformed' | 'bad-signature' | 'expired';

const VERSION = 'v1';
const id = z.string().min(1).max(100);

const claimsSchema = z.strictObject({
  identity: z.strictObject({ sub: id, type: z.enum(USER_TYPES), schoolId: id.nullable(), campusId: id.nullable() }),
  scope: z.discriminatedUnion('mode', [
    z.strictObject({ mode: z.literal('school'), targetSchoolId: id.optional() }),
    z.strictObject({ mode: z.literal('campus'), campusId: id }),
  ]),
  runId: id,
  threadId: id,
  epoch: z.number().int().min(0),
  exp: z.number().int().positive(),
});

const mac = (key: string, body: string): Buffer => createHmac('sha256', key).update(`${VERSION}.${body}`).digest();

/** Fixed key order, so equal claims always give equal bytes. */
const normalise = (claims: DispatchClaims): DispatchClaims => ({
  identity: {
    sub: claims.identity.sub,
    type: claims.identity.type,
    schoolId: claims.identity.schoolId,
    campusId: claims.identity.campusId,
  },
  scope:
    claims.scope.mode === 'campus'
      ? { mode: 'campus', campusId: claims.scope.campusId }
      : { mode: 'school', ...(claims.scope.targetSchoolId ? { targetSchoolId: claims.scope.targetSchoolId } : {}) },
  runId: claims.runId,
  threadId: claims.threadId,
  epoch: claims.epoch,
  exp: claims.exp,
});

export const signDispatchToken = (key: string, claims: DispatchClaims): string => {
  const body = Buffer.from(JSON.stringify(normalise(claims))).toString('base64url');
  return `${VERSION}.${body}.${mac(key, body).toString('base64url')}`;
};

/** The claims of a token this key signed that has not expired, or why not. The signature is compared in constant time. */
export const verifyDispatchToken = (
  key: string,
  token: string | undefined,
  nowMs: number = Date.now(),
): { ok: true; claims: DispatchClaims } | { ok: false; reason: DispatchTokenRefusal } => {
  if (!token) return { ok: false, reason: 'missing' };
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION || !parts[1] || !parts[2]) return { ok: false, reason: 'malformed' };
  // The encoded texts are compared, not the decoded bytes: the last character of a 32-byte MAC in base64url carries two
  // unused bits, and a decoder ignores them, so a token with that character changed would otherwise still verify.
  const expected = Buffer.from(mac(key, parts[1]).toString('base64url'));
  const given = Buffer.from(parts[2]);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad-signature' };
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const parsed = claimsSchema.safeParse(decoded);
  if (!parsed.success) return { ok: false, reason: 'malformed' };
  if (parsed.data.exp * 1000 <= nowMs) return { ok: false, reason: 'expired' };
  return { ok: true, claims: parsed.data as DispatchClaims };
};

/** The call scope a run mode pins, exactly as the worker's proxy derives it. */
export const scopeOfRunMode = (
  runMode: { mode: 'school'; targetSchoolId?: string } | { mode: 'campus'; campus: { id: string } },
): AgentCallScope =>
  runMode.mode === 'campus'
    ? { mode: 'campus', campusId: runMode.campus.id }
    : { mode: 'school', ...(runMode.targetSchoolId ? { targetSchoolId: runMode.targetSchoolId } : {}) };

const sameIdentity = (a: AgentIdentity, b: AgentIdentity) =>
  a.sub === b.sub && a.type === b.type && a.schoolId === b.schoolId && a.campusId === b.campusId;

const sameScope = (a: AgentCallScope, b: AgentCallScope) =>
  a.mode === 'campus'
    ? b.mode === 'campus' && a.campusId === b.campusId
    : b.mode === 'school' && (a.targetSchoolId ?? null) === (b.targetSchoolId ?? null);

/** Whether an envelope's identity and scope are exactly what the token's run was minted with. */
export const envelopeMatchesClaims = (
  envelope: { identity: AgentIdentity; scope: AgentCallScope },
  claims: DispatchClaims,
): 'identity-mismatch' | 'scope-mismatch' | null =>
  !sameIdentity(envelope.identity, claims.identity) ? 'identity-mismatch' : !sameScope(envelope.scope, claims.scope) ? 'scope-mismatch' : null;
