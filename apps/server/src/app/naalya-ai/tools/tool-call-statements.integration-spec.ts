import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { personaRun } from '../../../testing/dispatch-envelope.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';

/**
 * The SQL functions a tool call's statements go through (migration 1764662400020), run as the app role on their own
 * connections: they run with the caller's rights, so row-level security binds them as it binds the statements they
 * replace, and the claim's lookup sees what committed while it waited.
 */
let testApp: TestApp;
const clients: pg.Client[] = [];

beforeAll(async () => {
  testApp = await createTestApp();
});
afterAll(async () => {
  await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
  await testApp?.close();
});

/** A connection of its own, closed after the file: the app role's (appUrl) or the owner's (ownerUrl, a cancel's lock). */
const connected = async (connectionString: string): Promise<pg.Client> => {
  const client = new pg.Client({ connectionString });
  await client.connect();
  clients.push(client);
  return client;
};

const appClient = (): Promise<pg.Client> => connected(testApp.database.appUrl);

/** BEGIN and open_tool_call as execute() sends them, pinned to `schoolId` and acting as `userId`; `fence` for a write. */
const openToolCall = async (client: pg.Client, schoolId: string, userId: string, runId: string, fence = true) => {
  await client.query('START TRANSACTION');
  const { rows } = await client.query(`SELECT * FROM open_tool_call($1, $2, $3, $4, $5, $6, $7)`, [schoolId, '', userId, '10000', '20000', runId, fence]);
  return rows[0] as Record<string, unknown>;
};

/** Whether `FOR UPDATE` of the run's row (what a cancel takes) is refused at once because another transaction locks it. */
const cancelWouldWait = async (runId: string): Promise<boolean> => {
  const cancel = await connected(testApp.database.ownerUrl);
  await cancel.query('START TRANSACTION');
  try {
    await cancel.query('SELECT id FROM agent_runs WHERE id = $1 FOR UPDATE NOWAIT', [runId]);
    return false;
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') return true;
    throw error;
  } finally {
    await cancel.query('ROLLBACK');
  }
};

describe('open_tool_call', () => {
  it('pins the tenant and time limits for the rest of the transaction and returns the run and the caller with their permissions', async () => {
    const client = await appClient();
    const admin = testApp.demo.schools[0].personas.schoolAdmin;
    const run = personaRun(admin.id);
    const opened = await openToolCall(client, admin.schoolId!, admin.id, run.runId);
    expect(opened).toMatchObject({
      run_status: 'running',
      run_owner_id: admin.id,
      run_thread_id: run.threadId,
      caller_active: true,
      caller_type: admin.type,
      caller_school_id: admin.schoolId,
      caller_permissions: expect.arrayContaining([expect.objectContaining({ action: expect.any(String), resource: expect.any(String) })]),
    });
    const { rows } = await client.query(
      `SELECT current_setting('app.school_id') AS school, current_setting('app.user_id') AS actor, current_setting('statement_timeout') AS limit`,
    );
    expect(rows[0]).toEqual({ school: admin.schoolId, actor: admin.id, limit: '10s' });
    await client.query('ROLLBACK');
    expect((await client.query(`SELECT current_setting('app.school_id', true) AS school`)).rows[0].school).toBe('');
  });

  it("reads nothing of another school: under school A's pin a school B caller gets their own row only (users_self_read) and none of their permission rows", async () => {
    const client = await appClient();
    const [schoolA, schoolB] = testApp.demo.schools;
    const stranger = schoolB.personas.schoolAdmin;
    const opened = await openToolCall(client, schoolA.id, stranger.id, personaRun(stranger.id).runId);
    // The run is read by the narrow definer lookup, as before; everything under RLS sees school A only.
    expect(opened).toMatchObject({ caller_school_id: schoolB.id, caller_permissions: [] });
    expect((await client.query(`SELECT count(*)::int AS n FROM users WHERE school_id = $1`, [schoolB.id])).rows[0].n).toBe(1);
    await client.query('ROLLBACK');
  });

  it('a write (fenced) holds a KEY SHARE lock on its run until it ends, so a cancel waits for it; a read (unfenced) takes none and no transaction id', async () => {
    const admin = testApp.demo.schools[0].personas.schoolAdmin;
    const { runId } = personaRun(admin.id);
    const write = await appClient();
    await openToolCall(write, admin.schoolId!, admin.id, runId, true);
    expect(await cancelWouldWait(runId)).toBe(true);
    await write.query('ROLLBACK');

    const read = await appClient();
    const opened = await openToolCall(read, admin.schoolId!, admin.id, runId, false);
    expect(opened).toMatchObject({ run_status: 'running', run_owner_id: admin.id, caller_active: true });
    expect(await cancelWouldWait(runId)).toBe(false);
    // No lock, so no transaction id: the read commits without a WAL record to flush.
    expect((await read.query('SELECT txid_current_if_assigned() AS xid')).rows[0].xid).toBeNull();
    await read.query('COMMIT');
  });

  it("the unfenced run lookup (agent_run_read_state) reads only the pinned user's run: another user's run, of this school or another school, is no run", async () => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const admin = schoolA.personas.schoolAdmin;
    const colleague = Object.values(schoolA.personas).find((persona) => persona.id !== admin.id)!;
    const stranger = schoolB.personas.schoolAdmin;
    const client = await appClient();
    for (const other of [colleague, stranger]) {
      // The fenced lookup (agent_run_dispatch_state, unchanged) does read it; execute() then refuses it as not the caller's.
      expect(await openToolCall(client, admin.schoolId!, admin.id, personaRun(other.id).runId, true)).toMatchObject({ run_owner_id: other.id });
      await client.query('ROLLBACK');
      expect(await openToolCall(client, admin.schoolId!, admin.id, personaRun(other.id).runId, false)).toMatchObject({ run_status: null, run_owner_id: null });
      await client.query('ROLLBACK');
    }
    // Called directly with another school's pin and user, it answers for that user's run only: never the one asked for.
    await client.query('START TRANSACTION');
    await client.query(`SELECT set_config('app.school_id', $1, true), set_config('app.user_id', $2, true)`, [schoolB.id, stranger.id]);
    expect((await client.query('SELECT * FROM agent_run_read_state($1)', [personaRun(admin.id).runId])).rows).toEqual([]);
    expect((await client.query('SELECT status FROM agent_run_read_state($1)', [personaRun(stranger.id).runId])).rows).toEqual([{ status: 'running' }]);
    await client.query('ROLLBACK');
  });

  it('returns no run for a run id that does not exist, so the call is refused as not in flight', async () => {
    const client = await appClient();
    const admin = testApp.demo.schools[0].personas.schoolAdmin;
    const opened = await openToolCall(client, admin.schoolId!, admin.id, randomUUID());
    expect(opened).toMatchObject({ run_status: null, run_owner_id: null, caller_active: true });
    await client.query('ROLLBACK');
  });
});

/** Two deliveries of one new call id, each in its own opened tool call of the same caller (the second not yet claimed). */
const twoDeliveries = async () => {
  const [first, second] = [await appClient(), await appClient()];
  const admin = testApp.demo.schools[0].personas.schoolAdmin;
  const { runId } = personaRun(admin.id);
  await openToolCall(first, admin.schoolId!, admin.id, runId);
  await openToolCall(second, admin.schoolId!, admin.id, runId);
  return { first, second, admin, callId: `claim-${randomUUID()}` };
};

describe('claim_tool_call', () => {
  it('a second delivery that waited on the claim finds the outcome the first committed while it waited', async () => {
    const { first, second, admin, callId } = await twoDeliveries();
    expect((await first.query(`SELECT request_hash, result FROM claim_tool_call($1, $2)`, [callId, '5000'])).rows).toEqual([]);
    const waiting = second.query(`SELECT request_hash, result FROM claim_tool_call($1, $2)`, [callId, '5000']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    await first.query(
      `INSERT INTO tool_call_ledger (call_id, school_id, event, request_hash, actor_id, result) VALUES ($1, $2, 'create.department', 'h', $3, '{"data":1}')`,
      [callId, admin.schoolId, admin.id],
    );
    await first.query('COMMIT');
    expect((await waiting).rows).toEqual([{ request_hash: 'h', result: { data: 1 } }]);
    await second.query('ROLLBACK');
  });

  it('gives up after its wait with lock_not_available, and leaves no lock_timeout behind', async () => {
    const { first, second, callId } = await twoDeliveries();
    await first.query(`SELECT * FROM claim_tool_call($1, $2)`, [callId, '5000']);
    await expect(second.query(`SELECT * FROM claim_tool_call($1, $2)`, [callId, '100'])).rejects.toMatchObject({ code: '55P03' });
    await second.query('ROLLBACK');
    expect((await first.query(`SELECT current_setting('lock_timeout') AS wait`)).rows[0].wait).toBe('0');
    await first.query('ROLLBACK');
  });
});
