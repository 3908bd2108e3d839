import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';

// The text as it was first written (entries, filter, sort, map, join). Hashes of it are stored (the ledger's request
// hash, approvals' argument hash), so the faster form must give exactly the same text for every value.
const reference = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(reference).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, entry]) => entry !== undefined)
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${reference(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value);
};

describe('canonicalJson', () => {
  it('gives exactly the text of the form its stored hashes were made with, for every kind of value', () => {
    const values: unknown[] = [
      null,
      0,
      -1.5,
      'text with "quotes" and \\ and \u2028',
      true,
      [],
      {},
      [undefined, 1, null],
      { undefinedOnly: undefined },
      { éclair: 1, Zebra: 2, apple: 3, '10': 4, '9': 5, '': 6, 'a b': 7, '\u{1F600}': 8, '\uFFFF': 9 },
      { event: 'create.department', identity: { sub: 'u', type: 'school_admin', schoolId: 's', campusId: null }, scope: { mode: 'school' }, args: { name: 'Sciences', campusId: undefined } },
      { nested: [[{ b: [1, [2, { d: 4, c: 3 }]] }], { a: new Date(0) }] },
    ];
    for (const value of values) expect(canonicalJson(value)).toBe(reference(value));
  });
});
