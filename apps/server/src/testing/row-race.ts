import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';

/**
 * Races `requests` on one row deterministically: the owner holds a lock on it (`lockSql`, e.g. `SELECT … FOR NO KEY
 * UPDATE`) while the requests start, so each reads the row as it was and then waits at its own write; the lock is let go
 * once `waiters` of them are waiting, and they proceed one after the other against a row the first has changed. Without
 * the hold two requests mostly run one after the other and a check-then-write race passes by luck.
 */
export const raceOnLockedRow = async <T>(
  owner: DataSource,
  lock: { sql: string; parameters: unknown[] },
  requests: () => Promise<T>[],
  options: { waiters?: number; timeoutMs?: number } = {},
): Promise<T[]> => {
  const { waiters = 2, timeoutMs = 10_000 } = options;
  const holder = owner.createQueryRunner();
  await holder.connect();
  try {
    await holder.startTransaction();
    const [{ pid }] = (await holder.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[];
    const locked = (await holder.query(lock.sql, lock.parameters)) as unknown[];
    if (locked.length !== 1) throw new Error(`raceOnLockedRow: the lock query matched ${locked.length} rows, not 1.`);
    const pending = requests();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // A second writer queues behind the first on the row's tuple lock, so it counts whoever waits in this database.
      const [{ count }] = (await owner.query(
        `SELECT count(*)::int AS count FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`,
        [pid],
      )) as { count: number }[];
      if (count >= waiters) break;
      if (Date.now() > deadline) {
        await holder.rollbackTransaction();
        await Promise.allSettled(pending);
        throw new Error(`raceOnLockedRow: only ${count} of ${waiters} requests reached the locked row in ${timeoutMs} ms.`);
      }
      await sleep(10);
    }
    await holder.commitTransaction();
    return await Promise.all(pending);
  } finally {
    await holder.release();
  }
};
