/**
 * The summary of what a write changed, as an audit row keeps it: the validated arguments or body, with every field
 * whose name says it is a secret left out (a password, token or key has no business in a log read by administrators
 * and exported to CSV), and bounded so one large call cannot bloat an append-only table kept for years.
 */
const SECRET_KEY = /pass(word)?|secret|token|api[-_]?key|private[-_]?key|authorization|cookie|credential/i;
const MAX_STRING = 500;
const MAX_ITEMS = 50;
const MAX_DEPTH = 4;
/** The whole summary, as JSON; past it only the field names are kept, so the row still says what was touched. */
export const MAX_CHANGES_CHARS = 8_000;

const bound = (value: unknown, depth: number): unknown => {
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}… (${value.length} characters)` : value;
  if (value === null || typeof value !== 'object') return typeof value === 'bigint' ? value.toString() : value;
  if (depth >= MAX_DEPTH) return Array.isArray(value) ? `[${value.length} items]` : '{…}';
  if (Array.isArray(value)) {
    const kept = value.slice(0, MAX_ITEMS).map((item) => bound(item, depth + 1));
    return value.length > MAX_ITEMS ? [...kept, `… ${value.length - MAX_ITEMS} more`] : kept;
  }
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (SECRET_KEY.test(key) || item === undefined) continue;
    out[key] = bound(item, depth + 1);
  }
  return out;
};

export const isSecretField = (key: string): boolean => SECRET_KEY.test(key);

export const auditChanges = (value: unknown): Record<string, unknown> | null => {
  if (value === null || value === undefined || typeof value !== 'object' || Array.isArray(value)) return null;
  const summary = bound(value, 0) as Record<string, unknown>;
  if (JSON.stringify(summary).length <= MAX_CHANGES_CHARS) return summary;
  return { truncated: true, fields: Object.keys(summary) };
};
