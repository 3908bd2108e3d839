import { describe, expect, it } from 'vitest';
import { isTokenLive, tokenExpiry } from './session';

/** A JWT-shaped token (header.payload.signature) with the claims given; the Hub never checks the signature. */
const jwt = (claims: Record<string, unknown>) => `eyJhbGciOiJIUzI1NiJ9.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

describe('the session token', () => {
  it('reads its expiry from the JWT exp claim (seconds), base64url-encoded', () => {
    expect(tokenExpiry(jwt({ sub: 'u-ü?>', exp: 1_800_000_000 }))).toBe(1_800_000_000_000);
  });

  it('a token past its exp, or within seconds of it, is not live; one well before it is', () => {
    const now = 1_800_000_000_000;
    expect(isTokenLive(jwt({ exp: 1_800_000_000 }), now)).toBe(false);
    expect(isTokenLive(jwt({ exp: 1_800_000_002 }), now)).toBe(false);
    expect(isTokenLive(jwt({ exp: 1_800_000_600 }), now)).toBe(true);
  });

  it('a token with no readable exp is left to the server to refuse (401), not guessed at', () => {
    expect(tokenExpiry('not-a-jwt')).toBeNull();
    expect(tokenExpiry('a.%%%.c')).toBeNull();
    expect(tokenExpiry(jwt({ sub: 'x' }))).toBeNull();
    expect(isTokenLive('not-a-jwt', Date.now())).toBe(true);
  });
});
