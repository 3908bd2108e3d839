import { currentManager } from '../tenancy/tenant-context.js';

/**
 * Serialises the units of work that take the same key, on every server replica, until this one commits or rolls back:
 * for a check-then-write with no row to lock yet (a first insert, a count against a limit). A transaction advisory
 * lock is never left held; keys hash to 64 bits, and a collision only makes two unrelated writes wait for each other.
 *
 * `waitMs` bounds the wait for a holder (PostgreSQL's lock_not_available, 55P03, when it runs out) for a caller whose
 * answer is worthless after a time of its own, shorter than the statement limit; the limit is set and put back in the
 * same statement as the lock, so nothing else of the unit of work runs under it. The app never sets lock_timeout
 * otherwise (its role default is unset), so back is 0.
 */
export const lockUntilCommit = async (key: string, options: { waitMs?: number } = {}): Promise<void> => {
  if (options.waitMs === undefined) {
    await currentManager().query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [key]);
    return;
  }
  await currentManager().query(
    `SELECT set_config('lock_timeout', $2, true), pg_advisory_xact_lock(hashtextextended($1, 0)), set_config('lock_timeout', '0', true)`,
    [key, String(Math.max(1, Math.ceil(options.waitMs)))],
  );
};
