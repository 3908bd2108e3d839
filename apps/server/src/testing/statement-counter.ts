import pg from 'pg';
import { TEST_APP_ROLE } from './test-postgres.js';

/**
 * The shared tool-call quota reserves calls in blocks of 32 on a connection of its own (one statement per block per key,
 * see tool-call-quota.ts) and prunes past minutes on a timer: amortised, not part of any one call's count.
 */
const AMORTISED = /\b(reserve|prune)_tool_call_quota\(/;

const textOf = (config: unknown): string =>
  typeof config === 'string' ? config : typeof (config as { text?: unknown })?.text === 'string' ? (config as { text: string }).text : '';

/**
 * Records every statement the server's pg driver sends to PostgreSQL as the app role in one database, from the moment
 * it is installed until it is removed: the wire-level count, whatever layer (TypeORM, a raw query, a transaction's
 * BEGIN and COMMIT) issued it. The server runs in the test's process, so its driver is this module's `pg`.
 */
export const recordStatements = (database: string) => {
  const statements: string[] = [];
  const query = pg.Client.prototype.query;
  // pg's overloads cannot be restated without losing them; the wrapper passes every argument through untouched.
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (this.user === TEST_APP_ROLE.name && this.database === database) {
      const text = textOf(args[0]);
      if (!AMORTISED.test(text)) statements.push(text.replace(/\s+/g, ' ').trim());
    }
    return (query as (...rest: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  return {
    /** The statements `work` caused, in the order the driver sent them. */
    during: async <T>(work: () => Promise<T>): Promise<{ result: T; statements: string[] }> => {
      statements.length = 0;
      const result = await work();
      return { result, statements: [...statements] };
    },
    remove: () => {
      pg.Client.prototype.query = query;
    },
  };
};
