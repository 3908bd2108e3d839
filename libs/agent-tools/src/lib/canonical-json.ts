/**
 * JSON with object keys sorted at every depth and undefined members left out, so the same value always gives the
 * same text whatever order its keys were written in. The worker and the server each hash it (sha256, hex) to bind
 * an answer, an approval or an idempotency record to exactly one set of arguments; the hash itself stays on their
 * side because this contract is zod only and also runs in the browser.
 */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, entry]) => entry !== undefined)
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value);
};
