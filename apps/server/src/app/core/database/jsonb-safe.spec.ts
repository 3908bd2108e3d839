import { describe, expect, it } from 'vitest';
import { withoutNul } from './jsonb-safe.js';

describe('withoutNul', () => {
  it('replaces U+0000 and lone surrogates with U+FFFD in strings and keys at any depth, keeping paired surrogates', () => {
    expect(withoutNul({ 'k\u0000ey': ['a\u0000b', { deep: 'x\uDC00y' }], emoji: '\uD83D\uDE00', n: 1, flag: true, none: null })).toEqual({
      'k\uFFFDey': ['a\uFFFDb', { deep: 'x\uFFFDy' }],
      emoji: '\uD83D\uDE00',
      n: 1,
      flag: true,
      none: null,
    });
  });

  it('returns clean values unchanged and leaves what is not a plain object alone', () => {
    const date = new Date(0);
    expect(withoutNul('plain')).toBe('plain');
    expect(withoutNul(date)).toBe(date);
    expect(withoutNul(undefined)).toBeUndefined();
  });
});
