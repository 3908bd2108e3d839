/** A lone UTF-16 surrogate: JSON.stringify writes it as an escape ("\ud800") that PostgreSQL's jsonb refuses. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

const cleanString = (value: string): string => value.replaceAll('\u0000', '\uFFFD').replace(LONE_SURROGATE, '\uFFFD');

/**
 * The value with every U+0000 and every lone surrogate, in strings and object keys at any depth, replaced by U+FFFD.
 * PostgreSQL's text and jsonb cannot hold U+0000 ("unsupported Unicode escape sequence") nor jsonb an unpaired
 * surrogate, so one such character in what a model wrote would fail the whole insert, and with it every event of the
 * batch and the run's end. Used where content the server does not choose (a worker's run events) is stored: there the
 * text is kept, visibly marked, rather than refused; what a client sends is refused instead (hostile-input.ts).
 */
export const withoutNul = <T>(value: T): T => {
  if (typeof value === 'string') return cleanString(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => withoutNul(item)) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [cleanString(key), withoutNul(item)])) as T;
  }
  return value;
};
