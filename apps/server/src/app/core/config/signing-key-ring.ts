/**
 * The HMAC keys of login tokens (JWT_SECRET) and dispatch tokens (DISPATCH_SIGNING_KEY), each with a key id so that a
 * key can be replaced without logging anybody out or interrupting a run: a token names the key that signed it, new
 * tokens are signed with the current key, and tokens of a previous key still verify until that key is retired.
 *
 * Rotation: set the new key as current (`k2:<secret>`) and the old one as previous (`k1:<secret>`); once the longest
 * lifetime of a token the old key signed has passed, remove it from the previous list.
 */

export type SigningKey = { kid: string; secret: string };
export type SigningKeyRing = { current: SigningKey; previous: readonly SigningKey[] };

/**
 * The key id of a plain secret (no `kid:`), and of tokens from before key ids: so a deployment that set a plain secret
 * keeps every token it signed valid when it moves to this version, and retires that secret as `default:<secret>`.
 */
export const DEFAULT_KID = 'default';
export const MIN_SECRET_LENGTH = 32;

const KID = /^[A-Za-z0-9_-]{1,32}$/;
const WITH_KID = /^([A-Za-z0-9_-]{1,32}):(.+)$/s;

/**
 * `kid:secret`, or a plain secret of the default key id. A value is read as `kid:secret` only when what follows the
 * colon is itself long enough to be a secret, so a plain secret that happens to hold a colon early is a plain secret.
 */
export const parseSigningKey = (value: string): SigningKey => {
  const match = WITH_KID.exec(value);
  if (match && (match[2] ?? '').length >= MIN_SECRET_LENGTH) return { kid: match[1] ?? DEFAULT_KID, secret: match[2] ?? '' };
  return { kid: DEFAULT_KID, secret: value };
};

/** Why a current key is not one (never echoing it), or null. */
export const currentKeyProblem = (value: string): string | null =>
  parseSigningKey(value).secret.length < MIN_SECRET_LENGTH ? `must be at least ${MIN_SECRET_LENGTH} characters (or "kid:" and a secret of at least ${MIN_SECRET_LENGTH})` : null;

const previousEntries = (value: string): string[] => value.split(',').map((entry) => entry.trim()).filter(Boolean);

/** Why a comma list of previous `kid:secret` keys is not one, naming the entry by position (never its text), or null. */
export const previousKeysProblem = (value: string, current: string | undefined): string | null => {
  const seen = new Set<string>(current === undefined ? [] : [parseSigningKey(current).kid]);
  for (const [index, entry] of previousEntries(value).entries()) {
    const separator = entry.indexOf(':');
    const kid = entry.slice(0, separator);
    if (separator < 0 || !KID.test(kid)) return `entry ${index + 1} must be "kid:secret" (a key id of letters, digits, _ or -)`;
    if (entry.length - separator - 1 < MIN_SECRET_LENGTH) return `entry ${index + 1}'s secret must be at least ${MIN_SECRET_LENGTH} characters`;
    if (seen.has(kid)) return `entry ${index + 1} repeats key id "${kid}" (each key, current or previous, needs its own)`;
    seen.add(kid);
  }
  return null;
};

export const parseSigningKeyRing = (current: string, previous = ''): SigningKeyRing => ({
  current: parseSigningKey(current),
  previous: previousEntries(previous).map((entry) => {
    const separator = entry.indexOf(':');
    return { kid: entry.slice(0, separator), secret: entry.slice(separator + 1) };
  }),
});

/** The key a token names, current or previous; undefined for a retired or unknown key id. */
export const keyOfId = (ring: SigningKeyRing, kid: string): SigningKey | undefined =>
  ring.current.kid === kid ? ring.current : ring.previous.find((key) => key.kid === kid);

type RingSettings = {
  JWT_SECRET: string;
  JWT_PREVIOUS_SECRETS: string;
  DISPATCH_SIGNING_KEY: string;
  DISPATCH_PREVIOUS_SIGNING_KEYS: string;
};

// Parsed once per configuration object: every tool call verifies a dispatch token.
const jwtRings = new WeakMap<object, SigningKeyRing>();
const dispatchRings = new WeakMap<object, SigningKeyRing>();

const memo = (cache: WeakMap<object, SigningKeyRing>, config: object, build: () => SigningKeyRing): SigningKeyRing => {
  let ring = cache.get(config);
  if (!ring) cache.set(config, (ring = build()));
  return ring;
};

export const jwtKeyRing = (config: Pick<RingSettings, 'JWT_SECRET' | 'JWT_PREVIOUS_SECRETS'>): SigningKeyRing =>
  memo(jwtRings, config, () => parseSigningKeyRing(config.JWT_SECRET, config.JWT_PREVIOUS_SECRETS));

export const dispatchKeyRing = (config: Pick<RingSettings, 'DISPATCH_SIGNING_KEY' | 'DISPATCH_PREVIOUS_SIGNING_KEYS'>): SigningKeyRing =>
  memo(dispatchRings, config, () => parseSigningKeyRing(config.DISPATCH_SIGNING_KEY, config.DISPATCH_PREVIOUS_SIGNING_KEYS));
