import { randomUUID } from 'node:crypto';
import { AGENT_THREAD_DELETED_PATTERN, ERROR_SENTENCES } from '@naalya/agent-tools';
import { MESSAGE_SIGNATURE_HEADER, parseMessageVerifyingKeys, verifyMessage } from '@naalya/rmq';
import type { GetMessage } from 'amqplib';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { TEST_RUN_SIGNING_KEYS, type TestApp } from '../../../testing/test-app.js';
import { agentRequest, createAgentTestApp, createTestBroker, runEvents, storeAsWorker, type TestBroker } from '../fixtures/agent-run-test-kit.js';

let broker: TestBroker;
let testApp: TestApp;

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names);
});
afterAll(async () => {
  await testApp?.close();
  await broker?.close();
});
beforeEach(async () => {
  await broker.channel.purgeQueue(broker.names.runsQueue);
});

const call = (persona: DemoPersona, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => agentRequest(testApp.app, testApp, persona, method, path, body);
const newThread = async (persona: DemoPersona) => ((await call(persona, 'POST', '/agent/threads', {})).body as { id: string }).id;
const startRun = async (persona: DemoPersona, thread: string, body: Record<string, unknown> = { message: 'List my classes' }) => {
  const answer = await call(persona, 'POST', `/agent/threads/${thread}/runs`, body);
  expect(answer.status).toBe(201);
  return { threadId: thread, runId: (answer.body as { runId: string }).runId };
};
const count = async (table: string, column: string, value: string) =>
  ((await testApp.owner.query(`SELECT count(*)::int AS count FROM ${table} WHERE ${column} = $1`, [value])) as { count: number }[])[0].count;
const notFound = { status: 404, body: expect.objectContaining({ code: 'THREAD_NOT_FOUND', message: ERROR_SENTENCES.THREAD_NOT_FOUND }) };

/** Every message on the runs queue now (taken off it). */
const drainRunsQueue = async (): Promise<GetMessage[]> => {
  const messages: GetMessage[] = [];
  for (let message = await broker.channel.get(broker.names.runsQueue, { noAck: true }); message; message = await broker.channel.get(broker.names.runsQueue, { noAck: true })) {
    messages.push(message);
  }
  return messages;
};

describe('DELETE /agent/threads/:id: a thread is deleted by its owner only', () => {
  it('the owner gets 204: the thread, its runs, their events and its approvals are gone, its audit rows stay, and a signed message asks the workers to delete its checkpoints', async () => {
    const school = testApp.demo.schools[0];
    const persona = school.personas.teacher;
    const thread = await newThread(persona);
    const ids = await startRun(persona, thread);
    const run = runEvents(ids);
    await storeAsWorker(testApp, ids, [run.started(), run.text('m1', 'Here are your classes'), run.finished()]);
    await testApp.owner.query(
      `INSERT INTO tool_call_approvals (school_id, thread_id, run_id, interrupt_id, call_id, event, args_hash, user_id, approved, answer, expires_at)
       VALUES ($1, $2, $3, 'i', $4, 'departments.create', 'h', $5, true, 'yes', now())`,
      [school.id, thread, ids.runId, randomUUID(), persona.id],
    );
    // What the run's tool calls left in the audit log: it names the run, with no key onto it.
    await testApp.owner.query(
      `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, resource_id, source, call_id)
       VALUES ($1, $2, 'staff', 'read', 'class', $3, 'agent', $4)`,
      [school.id, persona.id, ids.runId, `${ids.runId}:call-1`],
    );
    expect(await count('agent_run_events', 'run_id', ids.runId)).toBeGreaterThan(0);
    await drainRunsQueue();

    const answer = await call(persona, 'DELETE', `/agent/threads/${thread}`);
    expect(answer.status).toBe(204);
    expect(answer.body).toBeFalsy();

    expect(await count('agent_threads', 'id', thread)).toBe(0);
    expect(await count('agent_runs', 'thread_id', thread)).toBe(0);
    expect(await count('agent_run_events', 'run_id', ids.runId)).toBe(0);
    expect(await count('tool_call_approvals', 'thread_id', thread)).toBe(0);
    expect(await count('audit_log', 'resource_id', ids.runId)).toBe(1);
    expect(await call(persona, 'GET', `/agent/threads/${thread}`)).toEqual(notFound);
    expect(await call(persona, 'DELETE', `/agent/threads/${thread}`)).toEqual(notFound);

    // One message for the workers, published and signed by the server as a run step is: a worker admits nothing else.
    const [message, ...rest] = await drainRunsQueue();
    expect(rest).toHaveLength(0);
    expect(JSON.parse(message.content.toString('utf8'))).toEqual({ pattern: AGENT_THREAD_DELETED_PATTERN, data: { threadId: thread } });
    expect(message.properties.userId).toBe('guest');
    const check = verifyMessage(message.content, message.properties.headers?.[MESSAGE_SIGNATURE_HEADER], parseMessageVerifyingKeys(TEST_RUN_SIGNING_KEYS.publicKey));
    expect(check).toEqual({ ok: true, kid: 'test' });
  });

  it('anyone but the owner gets 404 and the thread stays: a colleague in the same school, another school\'s administrator, a platform administrator; a malformed id is 404 too', async () => {
    const [greenhill, lakeside] = testApp.demo.schools;
    const owner = greenhill.personas.teacher;
    const thread = await newThread(owner);
    for (const stranger of [greenhill.personas.subjectTeacher, greenhill.personas.schoolAdmin, lakeside.personas.schoolAdmin, testApp.demo.platformAdmin]) {
      expect(await call(stranger, 'DELETE', `/agent/threads/${thread}`), stranger.email).toEqual(notFound);
    }
    expect(await call(owner, 'DELETE', `/agent/threads/not-a-uuid`)).toEqual(notFound);
    expect(await count('agent_threads', 'id', thread)).toBe(1);
    expect(await drainRunsQueue()).toHaveLength(0);
  });

  it('row-level security binds the delete to the owner too: the app role, in a colleague\'s frame, deletes nothing even with no owner filter', async () => {
    const school = testApp.demo.schools[0];
    const thread = await newThread(school.personas.teacher);
    const client = new pg.Client({ connectionString: testApp.database.appUrl });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SELECT set_config('app.school_id', $1, true), set_config('app.user_id', $2, true)`, [school.id, school.personas.schoolAdmin.id]);
      expect((await client.query(`DELETE FROM agent_threads WHERE id = $1`, [thread])).rowCount).toBe(0);
      // Not even in a platform frame: the owner-only delete policy is restrictive.
      await client.query(`SELECT set_config('app.platform', 'on', true)`);
      expect((await client.query(`DELETE FROM agent_threads WHERE id = $1`, [thread])).rowCount).toBe(0);
      await client.query('COMMIT');
    } finally {
      await client.end();
    }
    expect(await count('agent_threads', 'id', thread)).toBe(1);
  });

  it('409 RUN_IN_PROGRESS while a run of the thread is running or queued: nothing is deleted and the workers are told nothing', async () => {
    const persona = testApp.demo.schools[1].personas.teacher;
    const thread = await newThread(persona);
    const ids = await startRun(persona, thread);
    const busy = { status: 409, body: expect.objectContaining({ code: 'RUN_IN_PROGRESS', message: ERROR_SENTENCES.RUN_IN_PROGRESS }) };
    expect(await call(persona, 'DELETE', `/agent/threads/${thread}`)).toEqual(busy);
    await startRun(persona, thread, { message: 'And then', multitaskStrategy: 'enqueue' });
    const run = runEvents(ids);
    await storeAsWorker(testApp, ids, [run.started(), run.finished()]);
    // The first run ended; the queued one is promoted or still queued: either way the thread is busy.
    expect(await call(persona, 'DELETE', `/agent/threads/${thread}`)).toEqual(busy);
    expect(await count('agent_threads', 'id', thread)).toBe(1);
    expect(await count('agent_runs', 'thread_id', thread)).toBe(2);
    const patterns = (await drainRunsQueue()).map((message) => (JSON.parse(message.content.toString('utf8')) as { pattern: string }).pattern);
    expect(patterns).not.toContain(AGENT_THREAD_DELETED_PATTERN);
  });
});
