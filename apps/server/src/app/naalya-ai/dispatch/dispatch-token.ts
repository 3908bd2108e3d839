import { createHmac, timingSafeEqual } from 'node:crypto';
import { USER_TYPES } from '@naalya/access';
import type { AgentCallScope, AgentIdentity } from '@naalya/agent-tools';
import { z } from 'zod';
import { DEFAULT_KID, keyOfId, parseSigningKey, type SigningKeyRing } from '../../core/config/signing-key-ring.js';

/**
 * What the server minted at dispatch, signed so that a tool call can prove it: the caller, the run mode (as the
 * call scope it pins), the run and its thread, and an expiry. Format: `v2.<kid>.<base64url(JSON claims)>.<base64url(HMAC-SHA256)>`,
 * the MAC over everything before it, so the key id is signed too; `kid` names which of DISPATCH_SIGNING_KEY and
 * DISPATCH_PREVIOUS_SIGNING_KEYS signed it, so the key can be replaced while runs are in flight. `v1.<claims>.<mac>`
 * (before key ids) is still read, as a token of the key id "default". The worker treats the token as opaque; only the
 * server holds the keys.
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

/** The key ring, or one key as configured (`kid:secret` or a plain secret): tests and tools sign with one key. */
export type DispatchKeys = SigningKeyRing | string;

const ringOf = (keys: DispatchKeys): SigningKeyRing => (typeof keys === 'string' ? { current: parseSigningKey(keys), previous: [] } : keys);

const id = z.string().min(1).max(100);
const KID = /^[A-Za-z0-9_-]{1,32}$/;

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

const mac = (secret: string, signed: string): string => createHmac('sha256', secret).update(signed).digest('base64url');

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

/** Signed with the current key, naming it. */
export const signDispatchToken = (keys: DispatchKeys, claims: DispatchClaims): string => {
  const { current } = ringOf(keys);
  const signed = `v2.${current.kid}.${Buffer.from(JSON.stringify(normalise(claims))).toString('base64url')}`;
  return `${signed}.${mac(current.secret, signed)}`;
};

/** The parts of a token of either format: what its MAC covers, the key id, the claims and the MAC; null if neither. */
const partsOf = (token: string): { signed: string; kid: string; body: string; signature: string } | null => {
  const parts = token.split('.');
  if (parts[0] === 'v2' && parts.length === 4 && KID.test(parts[1] ?? '') && parts[2] && parts[3]) {
    return { signed: parts.slice(0, 3).join('.'), kid: parts[1] ?? '', body: parts[2], signature: parts[3] };
  }
  if (parts[0] === 'v1' && parts.length === 3 && parts[1] && parts[2]) {
    return { signed: `v1.${parts[1]}`, kid: DEFAULT_KID, body: parts[1], signature: parts[2] };
  }
  return null;
};

/** The claims part of a token, undecoded and unverified: for tests and tools that read or edit a token. */
export const dispatchTokenBody = (token: string): string | undefined => partsOf(token)?.body;

/**
 * How many verified tokens a key ring remembers. One step's token carries every tool call the model makes in that step,
 * so a call usually presents bytes already verified: their claims are answered without the MAC, the JSON and the schema
 * again (about a tenth of a read's server CPU). Bounded: past it, the oldest go first.
 */
export const VERIFIED_TOKENS_MAX = 1_024;

/**
 * Per key ring (the server's, memoised by dispatchKeyRing): a ring made anew, as on a key change, starts empty. Keyed by
 * the token's exact bytes, MAC included, so only a token verified under this ring is ever found; expiry is still checked
 * on every call.
 */
const verifiedByRing = new WeakMap<SigningKeyRing, Map<string, DispatchClaims>>();

const deepFrozen = (claims: DispatchClaims): DispatchClaims => {
  Object.freeze(claims.identity);
  Object.freeze(claims.scope);
  return Object.freeze(claims);
};

const rememberVerified = (ring: SigningKeyRing, token: string, claims: DispatchClaims): void => {
  let verified = verifiedByRing.get(ring);
  if (!verified) verifiedByRing.set(ring, (verified = new Map()));
  if (verified.size >= VERIFIED_TOKENS_MAX) verified.delete(verified.keys().next().value as string);
  verified.set(token, claims);
};

/**
 * The claims of a token one of these keys signed that has not expired, or why not. The signature is compared in
 * constant time. A token naming a key id the ring does not hold (retired, or never ours) is a bad signature.
 */
export const verifyDispatchToken = (
  keys: DispatchKeys,
  token: string | undefined,
  nowMs: number = Date.now(),
): { ok: true; claims: DispatchClaims } | { ok: false; reason: DispatchTokenRefusal } => {
  if (!token) return { ok: false, reason: 'missing' };
  const known = typeof keys === 'string' ? undefined : verifiedByRing.get(keys)?.get(token);
  if (known) return known.exp * 1000 <= nowMs ? { ok: false, reason: 'expired' } : { ok: true, claims: known };
  const parts = partsOf(token);
  if (!parts) return { ok: false, reason: 'malformed' };
  const key = keyOfId(ringOf(keys), parts.kid);
  if (!key) return { ok: false, reason: 'bad-signature' };
  // The encoded texts are compared, not the decoded bytes: the last character of a 32-byte MAC in base64url carries two
  // unused bits, and a decoder ignores them, so a token with that character changed would otherwise still verify.
  const expected = Buffer.from(mac(key.secret, parts.signed));
  const given = Buffer.from(parts.signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad-signature' };
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(parts.body, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const parsed = claimsSchema.safeParse(decoded);
  if (!parsed.success) return { ok: false, reason: 'malformed' };
  if (parsed.data.exp * 1000 <= nowMs) return { ok: false, reason: 'expired' };
  // Frozen: a remembered token's claims are handed to every call that presents it.
  const claims = deepFrozen(parsed.data as DispatchClaims);
  if (typeof keys !== 'string') rememberVerified(keys, token, claims);
  return { ok: true, claims };
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
