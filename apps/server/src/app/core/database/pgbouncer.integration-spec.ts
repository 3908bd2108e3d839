import { randomBytes, randomUUID } from 'node:crypto';
import { createDepartmentTool, type AgentToolResult } from '@naalya/agent-tools';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentRunNotifier, AGENT_RUN_EVENTS_CHANNEL } from '../../naalya-ai/events/agent-run-notifier.service.js';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { startPgBouncer, type TestPgBouncer } from '@naalya/test-stack';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { TEST_APP_ROLE, withOwnerClient } from '../../../testing/test-postgres.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { currentManager, withSchool } from '../tenancy/tenant-context.js';
import { setupDatabase } from './setup-database.js';

// The server's DATABASE_URL goes through a real PgBouncer in transaction pooling (two server connections per
// database and role, so concurrent units of work share them); the notifier LISTENs on the direct URL.
const STATEMENT_TIMEOUT_MS = 1_000;
// PostgreSQL ends the session; PgBouncer, which then loses the server connection under a client in a transaction,
// closes that client too, and the unit of work's connection can no longer be queried: the next statement meets one of these.
const IDLE_ENDED = /idle-in-transaction timeout|server conn crashed|Connection terminated|not queryable/;

let pgb: TestPgBouncer;
let testApp: TestApp;
const setupDatabases: string[] = [];

beforeAll(async () => {
  pgb = await startPgBouncer();
  testApp = await createTestApp((database) => ({
    DATABASE_URL: pgb.appUrl(database.name),
    DATABASE_LISTEN_URL: database.appUrl,
    DATABASE_STATEMENT_TIMEOUT_MS: STATEMENT_TIMEOUT_MS,
  }));
});
afterAll(async () => {
  await testApp?.close();
  await pgb?.stop();
  await withOwnerClient(async (client) => {
    for (const name of setupDatabases) await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  });
});

const poolerClient = async (config: pg.ClientConfig = {}) => {
  const client = new pg.Client({ connectionString: pgb.appUrl(testApp.database.name), ...config });
  await client.connect();
  return client;
};

const waitFor = async (condition: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  return condition();
};

describe('startup parameters', () => {
  it('sabotage: the old connection, which sent statement_timeout as a startup parameter, is refused by the pooler', async () => {
    for (const parameter of ['statement_timeout', 'idle_in_transaction_session_timeout'] as const) {
      const client = new pg.Client({ connectionString: pgb.appUrl(testApp.database.name), [parameter]: 10_000 });
      await expect(client.connect()).rejects.toThrow(`unsupported startup parameter: ${parameter}`);
      await client.end().catch(() => undefined);
    }
  });

  it('the app data source connects through the pooler (it sends no session settings)', async () => {
    const [{ user }] = (await testApp.module.get(DataSource).query(`SELECT current_user AS user`)) as { user: string }[];
    expect(user).toBe(TEST_APP_ROLE.name);
  });
});

describe('the unit of work', () => {
  it('sets its tenant and its time limits in its own transaction, even when units of work share two server connections', async () => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const seen = await Promise.all(
      Array.from({ length: 12 }, (_, index) => {
        const school = index % 2 ? schoolB : schoolA;
        return withSchool(school.id, school.personas.teacher.id, async () => {
          const [row] = (await currentManager().query(
            `SELECT current_setting('app.school_id') AS school, current_setting('statement_timeout') AS statement,
                    current_setting('idle_in_transaction_session_timeout') AS idle, pg_backend_pid() AS pid, pg_sleep(0.05)`,
          )) as { school: string; statement: string; idle: string; pid: number }[];
          return { expected: school.id, ...row };
        });
      }),
    );
    for (const row of seen) expect(row).toMatchObject({ school: row.expected, statement: '1s', idle: '2s' });
    // Twelve units of work, at most two server connections: they really shared them.
    expect(new Set(seen.map((row) => row.pid)).size).toBeLessThanOrEqual(2);
  });

  it('leaves neither tenant nor time limit on the server connection for the next client', async () => {
    const [school] = testApp.demo.schools;
    await withSchool(school.id, school.personas.teacher.id, async () => undefined);
    const client = await poolerClient();
    try {
      for (let index = 0; index < 4; index++) {
        const { rows } = await client.query<{ school: string | null; statement: string }>(
          `SELECT current_setting('app.school_id', true) AS school, current_setting('statement_timeout') AS statement`,
        );
        expect(rows[0].school || null).toBeNull();
        // The cloned test database has no role default (db-setup's is tested below): whatever the frame set is gone.
        expect(rows[0].statement).toBe('0');
      }
    } finally {
      await client.end();
    }
  });

  it('cancels a statement over DATABASE_STATEMENT_TIMEOUT_MS through the pooler', async () => {
    const [school] = testApp.demo.schools;
    const started = Date.now();
    await expect(
      withSchool(school.id, school.personas.teacher.id, async () => {
        await currentManager().query(`SELECT pg_sleep(5)`);
      }),
    ).rejects.toThrow('canceling statement due to statement timeout');
    expect(Date.now() - started).toBeLessThan(4_000);
  });

  it('ends a transaction left idle for twice the statement limit', async () => {
    const [school] = testApp.demo.schools;
    await expect(
      withSchool(school.id, school.personas.teacher.id, async () => {
        await new Promise((resolve) => setTimeout(resolve, 2 * STATEMENT_TIMEOUT_MS + 700));
        await currentManager().query(`SELECT 1`);
      }),
    ).rejects.toThrow(IDLE_ENDED);
  });

  it("commits a tool call's transaction (ledger, change, audit) through the pooler", async () => {
    const [school] = testApp.demo.schools;
    const name = `Pooled ${randomBytes(3).toString('hex')}`;
    const result: AgentToolResult = await invokeTool(
      testApp.module,
      createDepartmentTool,
      await dispatchEnvelope(school.personas.schoolAdmin, createDepartmentTool, { name }),
    );
    expect(result).not.toHaveProperty('error');
    const [{ count }] = (await testApp.owner.query(`SELECT count(*)::int AS count FROM departments WHERE name = $1 AND school_id = $2`, [
      name,
      school.id,
    ])) as { count: number }[];
    expect(count).toBe(1);
  });
});

describe('the run-event notifier', () => {
  const notify = (payload: string) => testApp.owner.query(`SELECT pg_notify($1, $2)`, [AGENT_RUN_EVENTS_CHANNEL, payload]);

  it('hears the stored events on DATABASE_LISTEN_URL, a direct connection', async () => {
    const runId = randomUUID();
    const seen: (number | null)[] = [];
    const unsubscribe = await testApp.module.get(AgentRunNotifier).subscribe(runId, (seq) => seen.push(seq));
    try {
      for (const seq of [1, 2, 3]) await notify(`${runId}:${seq}`);
      expect(await waitFor(() => seen.length === 3, 3_000)).toBe(true);
      expect(seen).toEqual([1, 2, 3]);
    } finally {
      unsubscribe();
    }
  });

  it('sabotage: a notifier LISTENing through the pooler (no DATABASE_LISTEN_URL) hears nothing', async () => {
    const config = { ...testApp.module.get(AgentRunNotifier)['config'], DATABASE_LISTEN_URL: undefined };
    const notifier = new AgentRunNotifier(config);
    const runId = randomUUID();
    const seen: (number | null)[] = [];
    await notifier.subscribe(runId, (seq) => seen.push(seq));
    try {
      for (const seq of [1, 2, 3]) await notify(`${runId}:${seq}`);
      expect(await waitFor(() => seen.length > 0, 1_000)).toBe(false);
    } finally {
      await notifier.beforeApplicationShutdown();
    }
  });
});

describe('db-setup', () => {
  it('runs through the pooler, twice at once, holds no lock afterwards and gives the app role its time limits', async () => {
    const names = [0, 1].map(() => `${testApp.database.name}_setup_${randomBytes(3).toString('hex')}`);
    setupDatabases.push(...names);
    await Promise.all(
      names.map((name) => setupDatabase({ ownerUrl: pgb.ownerUrl(name), appUrl: pgb.appUrl(name), statementTimeoutMs: 1_234 })),
    );
    await withOwnerClient(async (client) => {
      // A leaked session lock would sit on an idle (pooled) server connection; others' setups in progress hold theirs
      // inside a transaction, so they do not count here.
      const { rows: locks } = await client.query(
        `SELECT count(*)::int AS count FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND a.state = 'idle'`,
      );
      expect(locks[0].count).toBe(0);
      for (const name of names) {
        const { rows } = await client.query<{ setconfig: string[] }>(
          `SELECT s.setconfig FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase JOIN pg_roles r ON r.oid = s.setrole
            WHERE d.datname = $1 AND r.rolname = $2`,
          [name, TEST_APP_ROLE.name],
        );
        expect(rows[0]?.setconfig).toEqual(expect.arrayContaining(['statement_timeout=1234ms', 'idle_in_transaction_session_timeout=2468ms']));
      }
    });
    // The role default reaches a connection through the pooler, for statements outside a unit of work.
    const client = new pg.Client({ connectionString: pgb.appUrl(names[0]) });
    await client.connect();
    try {
      const { rows } = await client.query<{ statement: string }>(`SELECT current_setting('statement_timeout') AS statement`);
      expect(rows[0].statement).toBe('1234ms');
    } finally {
      await client.end();
    }
  });
});
