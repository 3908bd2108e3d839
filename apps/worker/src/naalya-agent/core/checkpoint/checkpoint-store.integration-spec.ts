import { randomUUID } from 'node:crypto';
import { fromRunInterrupt, type AgentRunEvent, type AgentRunRequest } from '@naalya/agent-tools';
import { emptyCheckpoint } from '@langchain/langgraph-checkpoint';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentRunExecutor } from '../../runs/agent-run.executor.js';
import { FakeRunLeases, TEST_DISPATCH_TOKEN } from '../../testing/fake-run-leases.fixture.js';
import { FakeToolCaller } from '../../testing/fake-tool-caller.fixture.js';
import { ScriptedChatModel } from '../model/scripted-chat-model.js';
import { scriptedPolicy } from '../model/scripted-policy.js';
import { schoolContext } from '../tools/tool-context.fixture.js';
import { CheckpointStore } from './checkpoint-store.js';
import { FakeRunUsage } from '../../testing/fake-run-usage.fixture.js';
import { CHECKPOINT_OWNER_URL, CHECKPOINT_ROLE, CHECKPOINT_ROLE_URL, createCheckpointSchema } from '../../testing/checkpoint-role.fixture.js';

// A schema of its own on the local cluster, dropped afterwards, so suites running in parallel never meet. The store
// connects as a login role that owns only that schema and has no CREATE on the database, like naalya_checkpoint.
const schema = `agent_checkpoints_test_${randomUUID().slice(0, 8)}`;
const DAY_MS = 86_400_000;

let admin: pg.Client;
const stores: CheckpointStore[] = [];

const openStore = async (retentionDays = 30) => {
  const store = new CheckpointStore({ databaseUrl: CHECKPOINT_ROLE_URL, schema, retentionDays, sweepIntervalMs: 3_600_000, poolSize: 2 });
  await store.onModuleInit();
  stores.push(store);
  return store;
};

const putCheckpointAt = async (store: CheckpointStore, threadId: string, at: Date) => {
  const checkpoint = { ...emptyCheckpoint(), id: randomUUID(), ts: at.toISOString() };
  await store.saver.put({ configurable: { thread_id: threadId, checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, {});
};

const threadsIn = async () =>
  (await admin.query<{ thread_id: string }>(`SELECT DISTINCT thread_id FROM "${schema}".checkpoints ORDER BY thread_id`)).rows.map((row) => row.thread_id);

beforeAll(async () => {
  admin = new pg.Client({ connectionString: CHECKPOINT_OWNER_URL });
  await admin.connect();
  // The database setup creates the role and its schema; here the test does, the same way.
  await createCheckpointSchema(admin, schema);
});

afterAll(async () => {
  for (const store of stores) await store.onModuleDestroy();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

describe('CheckpointStore', () => {
  it('sets up the saver tables inside its schema at start, idempotently, as a role without CREATE on the database', async () => {
    const { rows: privileges } = await admin.query(`SELECT has_database_privilege($1, current_database(), 'CREATE') AS can`, [CHECKPOINT_ROLE.name]);
    expect(privileges[0]).toEqual({ can: false });

    await openStore();
    await openStore();

    const { rows } = await admin.query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [schema]);
    expect(rows.map((row) => row.table_name)).toEqual(['checkpoint_blobs', 'checkpoint_migrations', 'checkpoint_writes', 'checkpoints']);
  });

  it('workers starting together on a fresh schema all set it up (the ones that collide pass again)', async () => {
    const fresh = `${schema}_together`;
    await admin.query(`CREATE SCHEMA "${fresh}" AUTHORIZATION ${CHECKPOINT_ROLE.name}`);
    const together = Array.from({ length: 4 }, () => new CheckpointStore({ databaseUrl: CHECKPOINT_ROLE_URL, schema: fresh, retentionDays: 30, sweepIntervalMs: 3_600_000, poolSize: 2 }));
    try {
      const started = await Promise.allSettled(together.map((store) => store.onModuleInit()));
      expect(started.filter((result) => result.status === 'rejected')).toEqual([]);
    } finally {
      await Promise.all(together.map((store) => store.onModuleDestroy().catch(() => undefined)));
      await admin.query(`DROP SCHEMA IF EXISTS "${fresh}" CASCADE`);
    }
  });

  it('the retention sweep deletes threads whose latest checkpoint is older than the retention, and keeps the rest', async () => {
    const store = await openStore(30);
    const now = new Date();
    await putCheckpointAt(store, 'thread-old', new Date(now.getTime() - 45 * DAY_MS));
    await putCheckpointAt(store, 'thread-revived', new Date(now.getTime() - 60 * DAY_MS));
    await putCheckpointAt(store, 'thread-revived', new Date(now.getTime() - 2 * DAY_MS));
    await putCheckpointAt(store, 'thread-fresh', now);

    expect(await store.sweep(now)).toBe(1);
    expect(await threadsIn()).toEqual(expect.arrayContaining(['thread-fresh', 'thread-revived']));
    expect(await threadsIn()).not.toContain('thread-old');
    expect(await store.sweep(now)).toBe(0);
  });

  it('a run paused on a question resumes from PostgreSQL in another executor (a worker restart), without repeating its tool call', async () => {
    const caller = new FakeToolCaller().answer('list.departments', {
      data: [{ id: '22222222-2222-4222-8222-222222222222', name: 'Drama' }],
      scopeContext: 'You can see the whole school.',
    });
    const executorOn = async () => {
      const events: AgentRunEvent[] = [];
      const executor = new AgentRunExecutor({
        toolCaller: caller,
        checkpointer: (await openStore()).saver,
        events: { publish: async (batch) => void events.push(...batch.events) },
        leases: new FakeRunLeases(),
        usage: new FakeRunUsage(),
        chatModel: () => new ScriptedChatModel(scriptedPolicy),
      });
      return { executor, events };
    };
    const threadId = `thread-${randomUUID()}`;
    const contextFor = () => ({ ...schoolContext(), run: { runId: randomUUID(), threadId }, dispatchToken: TEST_DISPATCH_TOKEN });

    const first = await executorOn();
    await first.executor.execute({ kind: 'start', context: contextFor(), message: 'delete the Drama department' });
    const finish = first.events.at(-1);
    expect(finish).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'interrupt' } });
    const [question] = finish?.type === 'RUN_FINISHED' && finish.outcome.type === 'interrupt' ? finish.outcome.interrupts.map(fromRunInterrupt) : [];

    const second = await executorOn();
    const resume: AgentRunRequest = { kind: 'resume', context: contextFor(), answers: { [question?.interruptId ?? '']: 'yes' } };
    expect(await second.executor.execute(resume)).toBe('success');

    expect(caller.calls.map((call) => call.event)).toEqual(['list.departments', 'delete.department']);
  });
});
