import pg from 'pg';
import type { ReliabilityStack } from './stack.js';

export type HeldLock = {
  /** How many statements of other sessions wait for the lock. */
  waiters: () => Promise<number>;
  release: () => Promise<void>;
};

/**
 * Holds an EXCLUSIVE lock on `table` from an owner connection, so the server's writes to it wait inside their
 * transactions: a fault injected then lands mid-transaction, not before or after it.
 */
export const holdTableLock = async (stack: ReliabilityStack, table: string): Promise<HeldLock> => {
  const client = new pg.Client({ connectionString: stack.env['DATABASE_OWNER_URL'] });
  await client.connect();
  await client.query(`BEGIN; LOCK TABLE ${table} IN EXCLUSIVE MODE`);
  let released: Promise<void> | undefined;
  return {
    waiters: async () =>
      Number(
        (
          await stack.owner.query<{ count: string }>(
            // A write that serialises per key (an upsert's advisory lock) queues behind the first one on that lock, not
            // on the table, yet it too waits inside its transaction.
            `SELECT count(*) FROM pg_locks
              WHERE NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                AND (relation = $1::regclass OR locktype = 'advisory')`,
            [table],
          )
        ).rows[0].count,
      ),
    // Once: a phase releases mid-way and again in its finally.
    release: () =>
      (released ??= (async () => {
        await client.query('ROLLBACK').catch(() => undefined);
        await client.end().catch(() => undefined);
      })()),
  };
};
