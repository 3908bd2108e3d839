/**
 * The Activity export, opened in spreadsheets by inspectors: every cell quoted (commas, quotes and line breaks in a
 * department's name stay inside it) and any cell a spreadsheet would read as a formula (starting with = + - @, or a
 * tab or carriage return that some strip first) prefixed with a single quote, so it is shown, never evaluated.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

export const csvCell = (value: unknown): string => {
  if (value === null || value === undefined) return '""';
  const text = typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : typeof value === 'object' ? JSON.stringify(value) : String(value);
  const safe = FORMULA_START.test(text) ? `'${text}` : text;
  return `"${safe.replace(/"/g, '""')}"`;
};

export const CSV_COLUMNS = [
  'createdAt', 'actorName', 'actorId', 'actorType', 'source', 'tool', 'route', 'action',
  'resourceType', 'resourceId', 'resourceName', 'runId', 'callId', 'changes',
] as const;

export const toCsv = (rows: readonly Partial<Record<(typeof CSV_COLUMNS)[number], unknown>>[]): string =>
  [CSV_COLUMNS.join(','), ...rows.map((row) => CSV_COLUMNS.map((column) => csvCell(row[column])).join(','))].join('\r\n') + '\r\n';
