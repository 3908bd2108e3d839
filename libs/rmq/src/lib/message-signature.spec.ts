import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  MessageSigningKeyError,
  generateMessageSigningKeyPair,
  messageVerifyingKeyOf,
  parseMessageSigningKey,
  parseMessageVerifyingKeys,
  signMessage,
  verifyMessage,
} from './message-signature.js';

const body = Buffer.from(JSON.stringify({ pattern: 'agent.run', data: { kind: 'start', message: 'list departments' } }));
const current = generateMessageSigningKeyPair('k2');
const previous = generateMessageSigningKeyPair('k1');
const stranger = generateMessageSigningKeyPair('k2');

const signer = (pair = current) => parseMessageSigningKey(pair.privateKey);
const keysOf = (...pairs: Array<typeof current>) => parseMessageVerifyingKeys(pairs.map((pair) => pair.publicKey).join(','));

describe('signMessage and verifyMessage', () => {
  it('a signature by a listed key over the exact bytes verifies, and names its key id', () => {
    const header = signMessage(body, signer());
    expect(header).toMatch(/^k2\.[A-Za-z0-9_-]{86}$/);
    expect(verifyMessage(body, header, keysOf(current))).toEqual({ ok: true, kid: 'k2' });
    // amqplib may hand a header over as a Buffer.
    expect(verifyMessage(body, Buffer.from(header), keysOf(current))).toEqual({ ok: true, kid: 'k2' });
  });

  it('a tampered body does not verify, even by one byte or one added space', () => {
    const header = signMessage(body, signer());
    const flipped = Buffer.from(body);
    flipped[10] = (flipped[10] ?? 0) ^ 1;
    expect(verifyMessage(flipped, header, keysOf(current))).toEqual({ ok: false, failure: 'bad-signature', kid: 'k2' });
    expect(verifyMessage(Buffer.concat([body, Buffer.from(' ')]), header, keysOf(current))).toMatchObject({ ok: false, failure: 'bad-signature' });
    const reencoded = Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 1));
    expect(verifyMessage(reencoded, header, keysOf(current))).toMatchObject({ ok: false, failure: 'bad-signature' });
  });

  it('a key id the consumer does not hold is refused as unknown', () => {
    const header = signMessage(body, parseMessageSigningKey(generateMessageSigningKeyPair('k9').privateKey));
    expect(verifyMessage(body, header, keysOf(current, previous))).toEqual({ ok: false, failure: 'unknown-key', kid: 'k9' });
  });

  it('a signature by another key under a listed key id is refused', () => {
    const header = signMessage(body, signer(stranger));
    expect(verifyMessage(body, header, keysOf(current))).toEqual({ ok: false, failure: 'bad-signature', kid: 'k2' });
  });

  it('a missing or malformed header is refused without throwing', () => {
    const keys = keysOf(current);
    const good = signMessage(body, signer());
    const [kid, signature] = good.split('.') as [string, string];
    expect(verifyMessage(body, undefined, keys)).toEqual({ ok: false, failure: 'missing' });
    expect(verifyMessage(body, null, keys)).toEqual({ ok: false, failure: 'missing' });
    for (const header of [
      '',
      'k2',
      signature,
      `${kid}.`,
      `.${signature}`,
      `${kid}.${signature}.x`,
      `${kid}.${signature.slice(0, 40)}`,
      `${kid}.${signature}AA`,
      `${kid}.${Buffer.from(signature, 'base64url').toString('base64')}+/`,
      `k 2.${signature}`,
      `${'k'.repeat(65)}.${signature}`,
      `${kid}.${signature}${'A'.repeat(300)}`,
      42,
      { kid, signature },
    ]) {
      expect(verifyMessage(body, header, keys), String(header)).toMatchObject({ ok: false, failure: 'malformed' });
    }
  });

  it('rotation: a consumer holding two keys accepts either, and drops the old one when it is removed', () => {
    const both = keysOf(current, previous);
    const byOld = signMessage(body, signer(previous));
    const byNew = signMessage(body, signer(current));
    expect(verifyMessage(body, byOld, both)).toEqual({ ok: true, kid: 'k1' });
    expect(verifyMessage(body, byNew, both)).toEqual({ ok: true, kid: 'k2' });
    expect(verifyMessage(body, byOld, keysOf(current))).toEqual({ ok: false, failure: 'unknown-key', kid: 'k1' });
  });
});

describe('key parsing', () => {
  const message = (work: () => unknown): string => {
    try {
      work();
    } catch (error) {
      expect(error).toBeInstanceOf(MessageSigningKeyError);
      return (error as Error).message;
    }
    throw new Error('expected a MessageSigningKeyError');
  };
  const der = (pair: typeof current, which: 'privateKey' | 'publicKey') => pair[which].slice(pair[which].indexOf(':') + 1);

  it('reads a generated pair, with spaces around entries, and derives the public half of a private key', () => {
    expect(parseMessageSigningKey(` ${current.privateKey} `).kid).toBe('k2');
    expect([...parseMessageVerifyingKeys(` ${current.publicKey} , ${previous.publicKey}`).keys()]).toEqual(['k2', 'k1']);
    expect(messageVerifyingKeyOf(current.privateKey)).toBe(current.publicKey);
    expect(generateMessageSigningKeyPair().kid).toMatch(/^run-\d{8}-[0-9a-f]{6}$/);
  });

  it('names what is wrong with a private key, never echoing it', () => {
    expect(message(() => parseMessageSigningKey(undefined))).toMatch(/must be "kid:base64\(PKCS8 DER\)" of an Ed25519 private key, and is empty/);
    expect(message(() => parseMessageSigningKey('  '))).toMatch(/is empty/);
    expect(message(() => parseMessageSigningKey(der(current, 'privateKey')))).toMatch(/must be "kid:base64", with a key id/);
    expect(message(() => parseMessageSigningKey(`bad kid:${der(current, 'privateKey')}`))).toMatch(/invalid key id/);
    expect(message(() => parseMessageSigningKey('k1:not base64!'))).toMatch(/key id "k1"\) is not base64/);
    expect(message(() => parseMessageSigningKey('k1:AAAA'))).toMatch(/not a PKCS8 DER private key/);
    // The public half where the private one belongs.
    expect(message(() => parseMessageSigningKey(current.publicKey))).toMatch(/not a PKCS8 DER private key/);
    expect(message(() => parseMessageSigningKey(`${current.privateKey},${previous.privateKey}`))).toMatch(/one key/);
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
    expect(message(() => parseMessageSigningKey(`r1:${rsa}`))).toMatch(/is rsa, not Ed25519/);
    const secret = der(current, 'privateKey');
    expect(message(() => parseMessageSigningKey(`bad kid:${secret}`))).not.toContain(secret.slice(0, 20));
  });

  it('names what is wrong with a public key list', () => {
    expect(message(() => parseMessageVerifyingKeys(''))).toMatch(/must be "kid:base64\(SPKI DER\)\[,kid2:...\]" of Ed25519 public keys, and is empty/);
    expect(message(() => parseMessageVerifyingKeys(`${current.publicKey},`))).toMatch(/public key 2 is empty/);
    expect(message(() => parseMessageVerifyingKeys(`${current.publicKey},${stranger.publicKey}`))).toMatch(/public key 2 repeats key id "k2"/);
    expect(message(() => parseMessageVerifyingKeys(current.privateKey))).toMatch(/public key 1 \(key id "k2"\) is not an SPKI DER public key/);
    expect(message(() => parseMessageVerifyingKeys(`k1:${der(current, 'publicKey')},k3`))).toMatch(/public key 2 must be "kid:base64"/);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'der', type: 'spki' }).toString('base64');
    expect(message(() => parseMessageVerifyingKeys(`e1:${ec}`))).toMatch(/is ec, not Ed25519/);
  });
});
