/**
 * The keyset cursor of GET /audit-log: the (created_at, id) of the last row of a page, as microseconds since the epoch
 * (created_at's full precision; a JavaScript Date would round it and skip or repeat rows) and the row's uuid, in
 * base64url so clients treat it as opaque. It is a position, not a permission: a cursor forged to point anywhere
 * still reads only the caller's school, since the school filter and row-level security apply to every page.
 */
const SHAPE = /^(\d{1,19})\.([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export const encodeCursor = (micros: string, id: string): string => Buffer.from(`${micros}.${id}`, 'utf8').toString('base64url');

export const decodeCursor = (cursor: string): { micros: string; id: string } | null => {
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) return null;
  const match = SHAPE.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) return null;
  // Beyond bigint, PostgreSQL would fail the cast with a 500: refuse it here as a malformed cursor instead.
  if (BigInt(match[1] as string) > 9_223_372_036_854_775_807n) return null;
  return { micros: match[1] as string, id: match[2] as string };
};
