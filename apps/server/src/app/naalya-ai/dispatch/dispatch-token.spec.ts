import { createHmac } from 'node:crypto';
import { UserType } from '@naalya/access';
import { describe, expect, it } from 'vitest';
import { parseSigningKeyRing } from '../../core/config/signing-key-ring.js';
import { envelopeMatchesClaims, signDispatchToken, verifyDispatchToken, type DispatchClaims } from './dispatch-token.js';

const KEY = 'k'.repeat(40);
const claims: DispatchClaims = {
  identity: { sub: 'u1', type: UserType.STAFF, schoolId: 's1', campusId: null },
  scope: { mode: 'school' },
  runId: 'r1',
  threadId: 't1',
  epoch: 1,
  exp: Math.floor(Date.now() / 1000) + 60,
};

describe('dispatch token', () => {
  describe('verified tokens remembered by the key ring', () => {
    it('answers a token verified before only for its exact bytes: one changed character of the claims or the MAC is refused', () => {
      const ring = parseSigningKeyRing(`a:${KEY}`);
      const token = signDispatchToken(ring, claims);
      expect(verifyDispatchToken(ring, token)).toEqual({ ok: true, claims });
      expect(verifyDispatchToken(ring, token)).toEqual({ ok: true, claims });
      const [version, kid, body, signature] = token.split('.');
      const forged = { ...claims, identity: { ...claims.identity, sub: 'u2' } };
      const forgedBody = Buffer.from(JSON.stringify(forged)).toString('base64url');
      expect(verifyDispatchToken(ring, `${version}.${kid}.${forgedBody}.${signature}`)).toEqual({ ok: false, reason: 'bad-signature' });
      const flipped = `${signature.slice(0, 5)}${signature[5] === 'A' ? 'B' : 'A'}${signature.slice(6)}`;
      expect(verifyDispatchToken(ring, `${version}.${kid}.${body}.${flipped}`)).toEqual({ ok: false, reason: 'bad-signature' });
    });

    it('refuses a remembered token once it has expired', () => {
      const ring = parseSigningKeyRing(`a:${KEY}`);
      const token = signDispatchToken(ring, claims);
      expect(verifyDispatchToken(ring, token).ok).toBe(true);
      expect(verifyDispatchToken(ring, token, claims.exp * 1000)).toEqual({ ok: false, reason: 'expired' });
    });

    it('does not carry a token verified under one ring to another ring that does not hold its key', () => {
      const ring = parseSigningKeyRing(`a:${KEY}`);
      const token = signDispatchToken(ring, claims);
      expect(verifyDispatchToken(ring, token).ok).toBe(true);
      expect(verifyDispatchToken(parseSigningKeyRing(`a:${'z'.repeat(40)}`), token)).toEqual({ ok: false, reason: 'bad-signature' });
    });

    it('hands out claims no caller can change for the next call', () => {
      const ring = parseSigningKeyRing(`a:${KEY}`);
      const verified = verifyDispatchToken(ring, signDispatchToken(ring, claims));
      if (!verified.ok) throw new Error('expected the token to verify');
      expect(() => {
        (verified.claims.identity as { sub: string }).sub = 'u2';
      }).toThrow(TypeError);
    });
  });

  it('verifies a token this key signed and returns its claims', () => {
    expect(verifyDispatchToken(KEY, signDispatchToken(KEY, claims))).toEqual({ ok: true, claims });
  });

  it('refuses a missing token', () => {
    expect(verifyDispatchToken(KEY, undefined)).toEqual({ ok: false, reason: 'missing' });
  });

  it('refuses a token signed with another key', () => {
    expect(verifyDispatchToken(KEY, signDispatchToken('x'.repeat(40), claims))).toEqual({ ok: false, reason: 'bad-signature' });
  });

  it('refuses claims edited after signing (the signature no longer matches)', () => {
    const [version, kid, , signature] = signDispatchToken(KEY, claims).split('.');
    const edited = Buffer.from(JSON.stringify({ ...claims, identity: { ...claims.identity, type: UserType.PLATFORM_ADMIN } })).toString('base64url');
    expect(verifyDispatchToken(KEY, `${version}.${kid}.${edited}.${signature}`)).toEqual({ ok: false, reason: 'bad-signature' });
  });

  it('refuses a signature whose last character differs only in bits base64url leaves unused (same MAC bytes once decoded)', () => {
    const [version, kid, body, signature] = signDispatchToken(KEY, claims).split('.') as [string, string, string, string];
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(signature.at(-1) ?? '');
    // A 32-byte MAC is 43 characters; the last one carries 4 bits of the MAC and 2 unused ones.
    const twins = [...alphabet].filter((char, index) => index !== last && index >> 2 === last >> 2);
    expect(twins).toHaveLength(3);
    for (const twin of twins) {
      const forged = `${version}.${kid}.${body}.${signature.slice(0, -1)}${twin}`;
      expect(Buffer.from(forged.split('.')[3] ?? '', 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
      expect(verifyDispatchToken(KEY, forged)).toEqual({ ok: false, reason: 'bad-signature' });
    }
  });

  it('refuses an expired token', () => {
    const token = signDispatchToken(KEY, { ...claims, exp: Math.floor(Date.now() / 1000) - 1 });
    expect(verifyDispatchToken(KEY, token)).toEqual({ ok: false, reason: 'expired' });
  });

  it.each(['', 'v1', 'v1..', 'v2.e30.AAAA', 'v2.k.e30', 'v2.bad kid.e30.AAAA', 'v2..e30.AAAA', 'v1.e30', 'v1.e30.AAAA.extra', 'v3.k.e30.AAAA', 'garbage'])('refuses the malformed token %j', (token) => {
    const result = verifyDispatchToken(KEY, token);
    expect(result.ok).toBe(false);
  });

  it('refuses a validly signed body that is not the claims shape', () => {
    const body = Buffer.from(JSON.stringify({ identity: 'admin' })).toString('base64url');
    const signature = createHmac('sha256', KEY).update(`v1.${body}`).digest('base64url');
    expect(verifyDispatchToken(KEY, `v1.${body}.${signature}`)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('names its key: v2.<kid>.<claims>.<mac>, the key id under the MAC', () => {
    const token = signDispatchToken(`k2:${KEY}`, claims);
    expect(token.split('.').slice(0, 2)).toEqual(['v2', 'k2']);
    // Another key id on the same MAC and claims: the MAC covers the key id, so it no longer matches.
    const ring = { current: { kid: 'k2', secret: KEY }, previous: [{ kid: 'k3', secret: KEY }] };
    expect(verifyDispatchToken(ring, token.replace('v2.k2.', 'v2.k3.'))).toEqual({ ok: false, reason: 'bad-signature' });
  });

  it('verifies a token of a previous key in the ring, and refuses one whose key was retired or never held', () => {
    const oldToken = signDispatchToken(`k1:${'o'.repeat(40)}`, claims);
    const rotated = { current: { kid: 'k2', secret: KEY }, previous: [{ kid: 'k1', secret: 'o'.repeat(40) }] };
    expect(verifyDispatchToken(rotated, oldToken)).toEqual({ ok: true, claims });
    expect(verifyDispatchToken(rotated, signDispatchToken(rotated, claims))).toEqual({ ok: true, claims });
    expect(signDispatchToken(rotated, claims).split('.')[1]).toBe('k2');
    expect(verifyDispatchToken({ current: rotated.current, previous: [] }, oldToken)).toEqual({ ok: false, reason: 'bad-signature' });
    // A key id the ring holds with another secret: a forger naming our key id does not get our key's trust.
    expect(verifyDispatchToken(rotated, signDispatchToken(`k2:${'x'.repeat(40)}`, claims))).toEqual({ ok: false, reason: 'bad-signature' });
  });

  it('still reads a v1 token (before key ids) as one of the default key, while that key is current or previous', () => {
    const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const v1 = `v1.${body}.${createHmac('sha256', KEY).update(`v1.${body}`).digest('base64url')}`;
    expect(verifyDispatchToken(KEY, v1)).toEqual({ ok: true, claims });
    expect(verifyDispatchToken({ current: { kid: 'k2', secret: 'n'.repeat(40) }, previous: [{ kid: 'default', secret: KEY }] }, v1)).toEqual({ ok: true, claims });
    expect(verifyDispatchToken(`k2:${'n'.repeat(40)}`, v1)).toEqual({ ok: false, reason: 'bad-signature' });
  });

  it('matches an envelope only with exactly the minted identity and scope', () => {
    expect(envelopeMatchesClaims({ identity: claims.identity, scope: { mode: 'school' } }, claims)).toBeNull();
    expect(envelopeMatchesClaims({ identity: { ...claims.identity, sub: 'u2' }, scope: { mode: 'school' } }, claims)).toBe('identity-mismatch');
    expect(envelopeMatchesClaims({ identity: { ...claims.identity, campusId: 'c1' }, scope: { mode: 'school' } }, claims)).toBe('identity-mismatch');
    expect(envelopeMatchesClaims({ identity: claims.identity, scope: { mode: 'campus', campusId: 'c1' } }, claims)).toBe('scope-mismatch');
    expect(envelopeMatchesClaims({ identity: claims.identity, scope: { mode: 'school', targetSchoolId: 's2' } }, claims)).toBe('scope-mismatch');
  });
});
