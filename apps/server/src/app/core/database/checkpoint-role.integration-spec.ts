import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_APP_ROLE, urlFor, withOwnerClient } from '../../../testing/test-postgres.js';
import { CHECKPOINT_SCHEMA, setupDatabase } from './setup-database.js';

// The worker's checkpoint role, as `npm run db:setup` creates it when CHECKPOINT_DATABASE_URL is given.
const CHECKPOINT_ROLE = { name: 'naalya_checkpoint_test', password: 'naalya_checkpoint_test' };
const database = `naalya_ckpt_${process.pid}_${randomBytes(3).toString('hex')}`;

const asCheckpointRole = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
  const client = new pg.Client({ connectionString: urlFor(database, CHECKPOINT_ROLE) });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
};

const refusal = (client: pg.Client, sql: string) =>
  client.query(sql).then(
    () => 'allowed',
    (error: Error) => error.message,
  );

describe('setupDatabase with a checkpoint URL', () => {
  beforeAll(async () => {
    const urls = { ownerUrl: urlFor(database), appUrl: urlFor(database, TEST_APP_ROLE), checkpointUrl: urlFor(database, CHECKPOINT_ROLE) };
    await setupDatabase(urls);
    // Idempotent: a second setup changes nothing and does not fail.
    await setupDatabase(urls);
  }, 60_000);

  afterAll(async () => {
    await withOwnerClient((client) => client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`));
  });

  it('creates a login role with no superuser, RLS bypass, database or role creation', async () => {
    const attributes = await asCheckpointRole(async (client) => (await client.query(`SELECT rolsuper, rolbypassrls, rolcreatedb, rolcreaterole FROM pg_roles WHERE rolname = current_user`)).rows[0]);
    expect(attributes).toEqual({ rolsuper: false, rolbypassrls: false, rolcreatedb: false, rolcreaterole: false });
  });

  it('the role owns the checkpoint schema and works there by default', async () => {
    await asCheckpointRole(async (client) => {
      expect((await client.query(`SELECT nspowner::regrole::text AS owner FROM pg_namespace WHERE nspname = $1`, [CHECKPOINT_SCHEMA])).rows[0]).toEqual({
        owner: CHECKPOINT_ROLE.name,
      });
      expect((await client.query('SHOW search_path')).rows[0]).toEqual({ search_path: CHECKPOINT_SCHEMA });
      await client.query('CREATE TABLE IF NOT EXISTS probe_checkpoints (id int)');
      await client.query('INSERT INTO probe_checkpoints VALUES (1)');
      expect((await client.query(`SELECT count(*)::int AS n FROM ${CHECKPOINT_SCHEMA}.probe_checkpoints`)).rows[0]).toEqual({ n: 1 });
    });
  });

  it.each(['users', 'schools', 'departments', 'audit_log', 'tool_call_ledger', 'agent_threads', 'agent_runs', 'agent_run_events', 'tool_call_approvals'])('the role cannot read the domain table %s', async (table) => {
    expect(await asCheckpointRole((client) => refusal(client, `SELECT 1 FROM public.${table} LIMIT 1`))).toMatch(/permission denied/);
  });

  it('the role cannot call the login lookup or the run lookups, mark a run running, create in public, or use the app group', async () => {
    await asCheckpointRole(async (client) => {
      expect(await refusal(client, `SELECT * FROM public.auth_lookup('admin@greenhill.school')`)).toMatch(/permission denied/);
      // Nor the run lookups: the worker cannot learn or fake which runs are in flight (dispatch tokens depend on it).
      expect(await refusal(client, `SELECT * FROM public.agent_run_dispatch_state(gen_random_uuid())`)).toMatch(/permission denied/);
      expect(await refusal(client, `SELECT * FROM public.agent_run_tenant(gen_random_uuid())`)).toMatch(/permission denied/);
      // Nor the approvals: the worker can ask the user to confirm a call, never approve one itself.
      expect(await refusal(client, `SELECT * FROM public.tool_call_approval(gen_random_uuid(), 'call')`)).toMatch(/permission denied/);
      expect(
        await refusal(
          client,
          `INSERT INTO public.tool_call_approvals (thread_id, run_id, interrupt_id, call_id, event, args_hash, user_id, approved, answer, expires_at)
           VALUES (gen_random_uuid(), gen_random_uuid(), 'i', 'c', 'delete.department', 'h', gen_random_uuid(), true, 'yes', now())`,
        ),
      ).toMatch(/permission denied/);
      expect(await refusal(client, `UPDATE public.agent_runs SET status = 'running'`)).toMatch(/permission denied/);
      expect(await refusal(client, 'CREATE TABLE public.stray (id int)')).toMatch(/permission denied/);
      expect(await refusal(client, 'SET ROLE naalya_app_rw')).toMatch(/permission denied/);
    });
  });

  it('refuses a checkpoint URL that names the app role', async () => {
    await expect(
      setupDatabase({ ownerUrl: urlFor(database), appUrl: urlFor(database, TEST_APP_ROLE), checkpointUrl: urlFor(database, TEST_APP_ROLE) }),
    ).rejects.toThrow(/role of its own/);
  });
});
