import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from 'node:crypto';

/**
 * Ed25519 signatures over a message's exact body bytes, for messages whose consumer must know who wrote them even if
 * someone else can publish to its queue (a broker administrator can publish anywhere, and a user_id says only which
 * broker user published, not that the server wrote the body). The signer holds the private key; consumers hold only
 * public keys, each under a key id, so a new key can be added to the consumers before the signer switches to it.
 *
 * Header: `x-naalya-signature: <kid>.<base64url signature>`.
 * Private key: `kid:base64(PKCS8 DER)`. Public keys: `kid:base64(SPKI DER)[,kid2:base64(SPKI DER)...]`.
 */
export const MESSAGE_SIGNATURE_HEADER = 'x-naalya-signature';

const KID = /^[A-Za-z0-9_-]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const ED25519_SIGNATURE_BYTES = 64;
/** Longer header values are refused unread. */
const MAX_HEADER_LENGTH = 256;

export const SIGNING_KEY_HINT = 'generate a pair with `npm run keys:run-signing`';

/** A key text that cannot be used; the message names what is wrong, never the key's bytes. */
export class MessageSigningKeyError extends Error {
  override readonly name = 'MessageSigningKeyError';
}

export type MessageSigningKey = { readonly kid: string; readonly privateKey: KeyObject };
/** Public keys by key id. */
export type MessageVerifyingKeys = ReadonlyMap<string, KeyObject>;

const splitKid = (entry: string, what: string): { kid: string; base64: string } => {
  const index = entry.indexOf(':');
  if (index < 0) throw new MessageSigningKeyError(`${what} must be "kid:base64", with a key id before the colon`);
  const kid = entry.slice(0, index).trim();
  const base64 = entry.slice(index + 1).trim();
  if (!KID.test(kid)) throw new MessageSigningKeyError(`${what} has an invalid key id: 1 to 64 letters, digits, "_" or "-"`);
  if (!BASE64.test(base64)) throw new MessageSigningKeyError(`${what} (key id "${kid}") is not base64`);
  return { kid, base64 };
};

/** Parses `kid:base64(PKCS8 DER)` of an Ed25519 private key; throws a MessageSigningKeyError saying what is wrong. */
export const parseMessageSigningKey = (text: string | undefined): MessageSigningKey => {
  const value = text?.trim();
  if (!value) throw new MessageSigningKeyError(`must be "kid:base64(PKCS8 DER)" of an Ed25519 private key, and is empty (${SIGNING_KEY_HINT})`);
  if (value.includes(',')) throw new MessageSigningKeyError('must be one key, "kid:base64(PKCS8 DER)", not a list');
  const { kid, base64 } = splitKid(value, 'the private key');
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: Buffer.from(base64, 'base64'), format: 'der', type: 'pkcs8' });
  } catch {
    throw new MessageSigningKeyError(`the private key (key id "${kid}") is not a PKCS8 DER private key (${SIGNING_KEY_HINT})`);
  }
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new MessageSigningKeyError(`the private key (key id "${kid}") is ${privateKey.asymmetricKeyType ?? 'not asymmetric'}, not Ed25519`);
  }
  return { kid, privateKey };
};

/** Parses `kid:base64(SPKI DER)[,kid2:...]` of Ed25519 public keys; throws a MessageSigningKeyError saying what is wrong. */
export const parseMessageVerifyingKeys = (text: string | undefined): MessageVerifyingKeys => {
  const value = text?.trim();
  if (!value) throw new MessageSigningKeyError(`must be "kid:base64(SPKI DER)[,kid2:...]" of Ed25519 public keys, and is empty (${SIGNING_KEY_HINT})`);
  const keys = new Map<string, KeyObject>();
  value.split(',').forEach((raw, index) => {
    const entry = raw.trim();
    const what = `public key ${index + 1}`;
    if (!entry) throw new MessageSigningKeyError(`${what} is empty (a stray comma?)`);
    const { kid, base64 } = splitKid(entry, what);
    if (keys.has(kid)) throw new MessageSigningKeyError(`${what} repeats key id "${kid}"`);
    let publicKey: KeyObject;
    try {
      publicKey = createPublicKey({ key: Buffer.from(base64, 'base64'), format: 'der', type: 'spki' });
    } catch {
      throw new MessageSigningKeyError(`${what} (key id "${kid}") is not an SPKI DER public key (${SIGNING_KEY_HINT})`);
    }
    if (publicKey.asymmetricKeyType !== 'ed25519') {
      throw new MessageSigningKeyError(`${what} (key id "${kid}") is ${publicKey.asymmetricKeyType ?? 'not asymmetric'}, not Ed25519`);
    }
    keys.set(kid, publicKey);
  });
  return keys;
};

/** The header value for `body`: `<kid>.<base64url Ed25519 signature of the exact bytes>`. */
export const signMessage = (body: Buffer, key: MessageSigningKey): string =>
  `${key.kid}.${sign(null, body, key.privateKey).toString('base64url')}`;

export type MessageSignatureFailure = 'missing' | 'malformed' | 'unknown-key' | 'bad-signature';

export type MessageSignatureCheck = { ok: true; kid: string } | { ok: false; failure: MessageSignatureFailure; kid?: string };

/** Whether `header` is a signature of the exact bytes of `body` by one of `keys`. Never throws. */
export const verifyMessage = (body: Buffer, header: unknown, keys: MessageVerifyingKeys): MessageSignatureCheck => {
  if (header === undefined || header === null) return { ok: false, failure: 'missing' };
  const value = Buffer.isBuffer(header) ? header.toString('latin1') : header;
  if (typeof value !== 'string' || value.length > MAX_HEADER_LENGTH) return { ok: false, failure: 'malformed' };
  const dot = value.indexOf('.');
  if (dot < 0 || dot !== value.lastIndexOf('.')) return { ok: false, failure: 'malformed' };
  const kid = value.slice(0, dot);
  const encoded = value.slice(dot + 1);
  if (!KID.test(kid) || !BASE64URL.test(encoded)) return { ok: false, failure: 'malformed' };
  const signature = Buffer.from(encoded, 'base64url');
  if (signature.length !== ED25519_SIGNATURE_BYTES) return { ok: false, failure: 'malformed', kid };
  const publicKey = keys.get(kid);
  if (!publicKey) return { ok: false, failure: 'unknown-key', kid };
  let valid = false;
  try {
    valid = verify(null, body, publicKey, signature);
  } catch {
    valid = false;
  }
  return valid ? { ok: true, kid } : { ok: false, failure: 'bad-signature', kid };
};

export type MessageSigningKeyPair = {
  kid: string;
  /** `kid:base64(PKCS8 DER)`: for the signer only. */
  privateKey: string;
  /** `kid:base64(SPKI DER)`: for the consumers. */
  publicKey: string;
};

/** A new Ed25519 pair in the configuration format; the key id defaults to `run-<yyyymmdd>-<random>`. */
export const generateMessageSigningKeyPair = (kid = `run-${new Date().toISOString().slice(0, 10).replaceAll('-', '')}-${randomBytes(3).toString('hex')}`): MessageSigningKeyPair => {
  if (!KID.test(kid)) throw new MessageSigningKeyError('the key id must be 1 to 64 letters, digits, "_" or "-"');
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    kid,
    privateKey: `${kid}:${privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64')}`,
    publicKey: `${kid}:${publicKey.export({ format: 'der', type: 'spki' }).toString('base64')}`,
  };
};

/** The public half of a `kid:base64(PKCS8 DER)` private key, as `kid:base64(SPKI DER)`. */
export const messageVerifyingKeyOf = (signingKey: string): string => {
  const { kid, privateKey } = parseMessageSigningKey(signingKey);
  return `${kid}:${createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).toString('base64')}`;
};
