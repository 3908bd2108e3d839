/**
 * JSON with object keys sorted at every depth and undefined members left out, so the same value always gives the
 * same text whatever order its keys were written in. The worker and the server each hash it (sha256, hex) to bind
 * an answer, an approval or an idempotency record to exactly one set of arguments; the hash itself stays on their
 * side because this contract is zod only and also runs in the browser.
 */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) {
    let text = '[';
    // A member JSON cannot hold (undefined, a function) is empty, as join() leaves it.
    for (let index = 0; index < value.length; index++) text += (index ? ',' : '') + (canonicalJson(value[index]) ?? '');
    return `${text}]`;
  }
  if (value !== null && typeof value === 'object') {
    // Keys in UTF-16 code unit order (sort()'s own), with plain loops: every write's request hash goes through here.
    const keys = Object.keys(value).sort();
    let text = '{';
    for (const key of keys) {
      const entry = (value as Record<string, unknown>)[key];
      if (entry === undefined) continue;
      text += `${text.length > 1 ? ',' : ''}${JSON.stringify(key)}:${canonicalJson(entry)}`;
    }
    return `${text}}`;
  }
  return JSON.stringify(value);
};
