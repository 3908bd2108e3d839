import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import pg from 'pg';

/** The schema the checkpoint role owns; the server's database setup creates it (and nothing else for that role). */
export const CHECKPOINT_SCHEMA = 'agent_checkpoints';

export type CheckpointStoreOptions = {
  /** The checkpoint role's URL: it reaches only its own schema, never the domain tables. */
  databaseUrl: string;
  schema?: string;
  /** Threads whose latest checkpoint is older than this are deleted. */
  retentionDays: number;
  /** How often the retention sweep runs. Default one hour. */
  sweepIntervalMs?: number;
  poolSize?: number;
};

export const CHECKPOINT_STORE_OPTIONS = Symbol('CheckpointStoreOptions');

const SWEEP_BATCH = 500;
/** Passes of setup() before a start-up fails: a worker starting beside another on a fresh schema may meet its tables. */
const SETUP_ATTEMPTS = 5;
/** What a concurrent setup() of the same schema raises: a migration row or a table (and its row type) created twice. */
const CONCURRENT_SETUP_CODES: ReadonlySet<string> = new Set(['23505', '42P07', '42710']);
const DAY_MS = 86_400_000;

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

// PostgresSaver.setup() starts with CREATE SCHEMA IF NOT EXISTS, which PostgreSQL refuses without CREATE on the
// database even when the schema exists, and the checkpoint role deliberately lacks that privilege: the database
// setup creates the schema for it. So setup runs on a pool that skips that one statement; a missing schema then
// fails on the first table with a clear "schema does not exist".
const withoutSchemaCreation = (pool: pg.Pool): pg.Pool => {
  const skip = (text: unknown) => typeof text === 'string' && /^\s*CREATE SCHEMA IF NOT EXISTS\b/i.test(text);
  const connect = async () => {
    const client = await pool.connect();
    return new Proxy(client, {
      get: (target, key) => {
        if (key === 'query') {
          return (text: unknown, ...rest: unknown[]) =>
            skip(text) ? Promise.resolve({ rows: [], rowCount: 0 }) : (target.query as (...args: unknown[]) => unknown)(text, ...rest);
        }
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  };
  return new Proxy(pool, { get: (target, key) => (key === 'connect' ? connect : Reflect.get(target, key)) });
};

/** PostgresSaver on the checkpoint schema, set up at start, with a periodic retention sweep. */
@Injectable()
export class CheckpointStore implements OnModuleInit, OnModuleDestroy {
  readonly saver: PostgresSaver;
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private readonly logger = new Logger(CheckpointStore.name);
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | null = null;

  constructor(@Inject(CHECKPOINT_STORE_OPTIONS) private readonly options: CheckpointStoreOptions) {
    this.schema = options.schema ?? CHECKPOINT_SCHEMA;
    this.pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolSize ?? 5 });
    // An idle client's error (the database restarting) must not crash the worker; the next query reconnects.
    this.pool.on('error', (error) => this.logger.warn(`Checkpoint database connection error: ${error.message}`));
    this.saver = new PostgresSaver(this.pool, undefined, { schema: this.schema });
  }

  // setup() creates the saver's tables inside the schema (idempotent once done). Workers starting together on a fresh
  // schema run it at the same moment and collide on a migration's row or table: the one that collides passes again,
  // and then finds the other's work done.
  async onModuleInit(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await new PostgresSaver(withoutSchemaCreation(this.pool), undefined, { schema: this.schema }).setup();
        break;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (attempt < SETUP_ATTEMPTS && typeof code === 'string' && CONCURRENT_SETUP_CODES.has(code)) {
          await new Promise((resolve) => setTimeout(resolve, 50 * attempt + Math.floor(Math.random() * 100)));
          continue;
        }
        await this.pool.end().catch(() => undefined);
        throw new Error(
          `Cannot set up checkpoints in schema "${this.schema}" (run the database setup with CHECKPOINT_DATABASE_URL): ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    }
    await this.sweepLogged();
    this.timer = setInterval(() => void this.sweepLogged(), this.options.sweepIntervalMs ?? 3_600_000);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping?.catch(() => undefined);
    await this.pool.end();
  }

  /** Whether the checkpoint database answers a trivial query within `timeoutMs`: the worker's readiness. */
  async answers(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([this.pool.query('SELECT 1').then(() => true, () => false), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Deletes every checkpoint of one thread (a thread its owner deleted on the server); nothing if it has none. */
  deleteThread(threadId: string): Promise<void> {
    return this.saver.deleteThread(threadId);
  }

  /** Deletes every thread whose latest checkpoint is older than the retention period; returns how many. */
  async sweep(now: Date = new Date()): Promise<number> {
    const tables = (name: string) => `${quoteIdentifier(this.schema)}.${quoteIdentifier(name)}`;
    const cutoff = new Date(now.getTime() - this.options.retentionDays * DAY_MS).toISOString();
    let deleted = 0;
    for (;;) {
      const { rows } = await this.pool.query<{ thread_id: string }>(
        `SELECT thread_id FROM ${tables('checkpoints')} GROUP BY thread_id
          HAVING max((checkpoint->>'ts')::timestamptz) < $1::timestamptz LIMIT ${SWEEP_BATCH}`,
        [cutoff],
      );
      if (rows.length === 0) return deleted;
      const threadIds = rows.map((row) => row.thread_id);
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        for (const table of ['checkpoint_writes', 'checkpoint_blobs', 'checkpoints']) {
          await client.query(`DELETE FROM ${tables(table)} WHERE thread_id = ANY($1::text[])`, [threadIds]);
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
      deleted += threadIds.length;
      if (rows.length < SWEEP_BATCH) return deleted;
    }
  }

  private async sweepLogged(): Promise<number> {
    if (this.sweeping) return this.sweeping;
    this.sweeping = this.sweep()
      .then((deleted) => {
        if (deleted > 0) this.logger.log(`Deleted the checkpoints of ${deleted} thread(s) older than ${this.options.retentionDays} days.`);
        return deleted;
      })
      .catch((error: unknown) => {
        this.logger.warn(`Checkpoint retention sweep failed: ${error instanceof Error ? error.message : String(error)}`);
        return 0;
      })
      .finally(() => {
        this.sweeping = null;
      });
    return this.sweeping;
  }
}
