import { describe, expect, it } from 'vitest';
import { VALID_SERVER_ENV as VALID } from '../../../testing/server-env.js';
import { loadServerConfig } from './server-config.js';
import { keyOfId, parseSigningKey, parseSigningKeyRing } from './signing-key-ring.js';

const SECRET = 's'.repeat(40);

describe('signing keys with key ids', () => {
  it('reads "kid:secret", and a plain secret as the key id "default" (so tokens signed before key ids stay valid)', () => {
    expect(parseSigningKey(`k2:${SECRET}`)).toEqual({ kid: 'k2', secret: SECRET });
    expect(parseSigningKey(SECRET)).toEqual({ kid: 'default', secret: SECRET });
    // A plain secret holding a colon early is still one secret: what follows is too short to be a secret itself.
    expect(parseSigningKey(`ab:${'c'.repeat(20)}`)).toEqual({ kid: 'default', secret: `ab:${'c'.repeat(20)}` });
  });

  it('holds the current key and the previous ones by id, and no other', () => {
    const ring = parseSigningKeyRing(`k2:${SECRET}`, ` k1:${'o'.repeat(40)} , default:${'p'.repeat(40)}`);
    expect(keyOfId(ring, 'k2')?.secret).toBe(SECRET);
    expect(keyOfId(ring, 'k1')?.secret).toBe('o'.repeat(40));
    expect(keyOfId(ring, 'default')?.secret).toBe('p'.repeat(40));
    expect(keyOfId(ring, 'k3')).toBeUndefined();
  });

  it('refuses at start-up a short current key and a bad previous entry, by position, never echoing a secret', () => {
    expect(() => loadServerConfig({ ...VALID, JWT_SECRET: `k2:${'s'.repeat(10)}` })).toThrow(/JWT_SECRET is invalid: must be at least 32 characters/);
    expect(() => loadServerConfig({ ...VALID, JWT_PREVIOUS_SECRETS: 'no-key-id-here-no-key-id-here-no-key-id' })).toThrow(
      /JWT_PREVIOUS_SECRETS is invalid: entry 1 must be "kid:secret"/,
    );
    expect(() => loadServerConfig({ ...VALID, DISPATCH_PREVIOUS_SIGNING_KEYS: `k1:${SECRET},k2:short` })).toThrow(
      /DISPATCH_PREVIOUS_SIGNING_KEYS is invalid: entry 2's secret must be at least 32 characters/,
    );
    expect(() => loadServerConfig({ ...VALID, DISPATCH_SIGNING_KEY: `k1:${SECRET}`, DISPATCH_PREVIOUS_SIGNING_KEYS: `k1:${'o'.repeat(40)}` })).toThrow(
      /DISPATCH_PREVIOUS_SIGNING_KEYS is invalid: entry 1 repeats key id "k1"/,
    );
    try {
      loadServerConfig({ ...VALID, DISPATCH_PREVIOUS_SIGNING_KEYS: `k1:${SECRET},k2:short-secret-xyz` });
    } catch (error) {
      expect(String(error)).not.toContain('short-secret-xyz');
    }
    expect(loadServerConfig({ ...VALID, JWT_PREVIOUS_SECRETS: `k1:${SECRET}` }).JWT_PREVIOUS_SECRETS).toBe(`k1:${SECRET}`);
  });
});
