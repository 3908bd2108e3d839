import { randomUUID } from 'node:crypto';
import { RUN_EVENT_BATCH_MAX, toRunStreamEvent, type AgentRunEvent } from '@naalya/agent-tools';
import { runEventsIngestQueue } from '@naalya/rmq';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { TEST_DISPATCH_SIGNING_KEY } from '../../../testing/dispatch-envelope.js';
import type { TestApp } from '../../../testing/test-app.js';
import { signDispatchToken, verifyDispatchToken } from '../dispatch/dispatch-token.js';
import {
  asStored,
  agentRequest,
  createAgentTestApp,
  createTestBroker,
  openEventStream,
  runEvents,
  type OpenStream,
  type TestBroker,
} from '../fixtures/agent-run-test-kit.js';
import { AgentRunEventStore, type MessageOutcome, type PersistOutcome } from './agent-run-event-store.service.js';
import { AGENT_RUN_EVENTS_CHANNEL } from './agent-run-notifier.service.js';

/**
 * Run events in batches (RunEventBatch, one per AMQP message) through the real ingest, PostgreSQL and SSE: one server
 * instance, so every message goes through the store watched here.
 */

let broker: TestBroker;
let testApp: TestApp;
let schoolA: TestApp['demo']['schools'][0];
let listener: pg.Client;
const notifications: string[] = [];
const streams: OpenStream[] = [];

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names);
  [schoolA] = testApp.demo.schools;
  listener = new pg.Client({ connectionString: testApp.database.ownerUrl });
  await listener.connect();
  listener.on('notification', (message) => notifications.push(message.payload ?? ''));
  await listener.query(`LISTEN ${AGENT_RUN_EVENTS_CHANNEL}`);
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await listener?.end();
  await testApp?.close();
  await broker?.close();
});
beforeEach(async () => {
  vi.restoreAllMocks();
  await broker.channel.purgeQueue(broker.names.deadLetterQueue);
});

type Run = { runId: string; threadId: string; token: string };

const newRun = async (persona: DemoPersona = schoolA.personas.teacher): Promise<Run> => {
  const thread = await agentRequest(testApp.app, testApp, persona, 'POST', '/agent/threads', {});
  const threadId = (thread.body as { id: string }).id;
  const started = await agentRequest(testApp.app, testApp, persona, 'POST', `/agent/threads/${threadId}/runs`, { message: 'Hello' });
  expect(started.status).toBe(201);
  const { request } = await broker.takeRunRequest();
  return { threadId, runId: (started.body as { runId: string }).runId, token: request.context.dispatchToken ?? '' };
};

/** The run's token with some claims changed, signed with the server's key: what a worker of another step holds. */
const tokenWith = (token: string, change: { epoch?: number; threadId?: string }): string => {
  const verified = verifyDispatchToken(TEST_DISPATCH_SIGNING_KEY, token);
  if (!verified.ok) throw new Error(`The run's token does not verify: ${verified.reason}`);
  return signDispatchToken(TEST_DISPATCH_SIGNING_KEY, { ...verified.claims, ...change });
};

type StoredRow = { seq: number; type: string; payload: AgentRunEvent; message_id: string; tx: string };

/** The run's rows with the transaction that inserted each (xmin). */
const storedEvents = (runId: string) =>
  testApp.owner.query(`SELECT seq, type, payload, message_id, xmin::text AS tx FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [
    runId,
  ]) as Promise<StoredRow[]>;

const waitUntil = async (check: () => Promise<boolean> | boolean, timeoutMs = 8_000) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};
const waitForStored = async (runId: string, count: number) => {
  await waitUntil(async () => (await storedEvents(runId)).length >= count);
  return storedEvents(runId);
};
/** Nothing of the ingest's queue waits to be delivered. */
const queueEmpty = async () => (await broker.channel.checkQueue(runEventsIngestQueue(broker.names))).messageCount === 0;
const deadLetters = async () => (await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount;

/** A streamed reply: TEXT_MESSAGE_START, `count` deltas, TEXT_MESSAGE_END. */
const reply = (run: Run, messageId: string, count: number, from = 0): AgentRunEvent[] => [
  { runId: run.runId, threadId: run.threadId, type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', name: 'rover' },
  ...Array.from({ length: count }, (_, index) => runEvents(run).text(messageId, `token ${from + index} `)),
  { runId: run.runId, threadId: run.threadId, type: 'TEXT_MESSAGE_END', messageId },
];

/** Every call the ingest makes to the store from now on: the messages handed over together, and what became of each. */
const watchStore = () => {
  const store = testApp.module.get(AgentRunEventStore);
  const persist = store.persist.bind(store);
  const calls: { runId: string; messageIds: string[]; outcome: PersistOutcome }[] = [];
  vi.spyOn(store, 'persist').mockImplementation(async (runId, messages) => {
    const outcome = await persist(runId, messages);
    calls.push({ runId, messageIds: messages.map((message) => message.messageId), outcome });
    return outcome;
  });
  return calls;
};

/** Holds the run's row lock in a transaction of the owner's until release(): the ingest's next transaction waits on it. */
const holdRunLock = async (runId: string) => {
  const runner = testApp.owner.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  await runner.query(`SELECT 1 FROM agent_runs WHERE id = $1 FOR UPDATE`, [runId]);
  return async () => {
    await runner.commitTransaction();
    await runner.release();
  };
};

/** Backends waiting for a lock. */
const lockWaiters = async () =>
  ((await testApp.owner.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)) as {
    n: number;
  }[])[0].n;

describe('run event batches through the ingest', () => {
  it('a batch is stored whole, in order, gapless, in one transaction, and its rows are keyed <message id>:<index>', async () => {
    const run = await newRun();
    const first = [runEvents(run).started(), ...reply(run, 'm1', 40)];
    const second = [...reply(run, 'm2', 10), runEvents(run).finished()];
    const firstId = await broker.publishEvent(first);
    const secondId = await broker.publishEvent(second);

    const rows = await waitForStored(run.runId, first.length + second.length);
    expect(rows.map((row) => row.seq)).toEqual(Array.from({ length: first.length + second.length }, (_, index) => index + 1));
    expect(rows.map((row) => row.payload)).toEqual([...first, ...second].map(asStored));
    expect(rows.map((row) => row.message_id)).toEqual([...first.map((_, index) => `${firstId}:${index}`), ...second.map((_, index) => `${secondId}:${index}`)]);
    // Each batch's rows came from one transaction (xmin), and never one transaction per event.
    const firstTx = new Set(rows.slice(0, first.length).map((row) => row.tx));
    expect(firstTx.size).toBe(1);
    expect(new Set(rows.slice(first.length).map((row) => row.tx)).size).toBe(1);
    expect(await testApp.owner.query(`SELECT status, last_seq FROM agent_runs WHERE id = $1`, [run.runId])).toEqual([
      { status: 'finished', last_seq: first.length + second.length },
    ]);
  });

  it('a redelivered batch stores nothing twice, and is acknowledged', async () => {
    const run = await newRun();
    const batch = [runEvents(run).started(), ...reply(run, 'm1', 5)];
    const messageId = await broker.publishEvent(batch);
    await waitForStored(run.runId, batch.length);
    // The ack was lost: the broker delivers the same message (same id) again, then the step goes on.
    await broker.publishEvent(batch, { messageId });
    await broker.publishEvent(runEvents(run).finished());

    const rows = await waitForStored(run.runId, batch.length + 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await storedEvents(run.runId)).map((row) => row.type)).toEqual([...batch.map((event) => event.type), 'RUN_FINISHED']);
    expect(rows.at(-1)?.seq).toBe(batch.length + 1);
    await waitUntil(queueEmpty);
    expect(await queueEmpty()).toBe(true);
    expect(await deadLetters()).toBe(0);
  });

  it("a batch of a superseded epoch is dropped whole (acknowledged, nothing stored) while the current epoch's is stored", async () => {
    const run = await newRun();
    const [{ epoch }] = (await testApp.owner.query(`SELECT epoch FROM agent_runs WHERE id = $1`, [run.runId])) as { epoch: number }[];
    // The step was dispatched again (as the sweeper does): the first worker's token is of the old epoch.
    await testApp.owner.query(`UPDATE agent_runs SET epoch = epoch + 1 WHERE id = $1`, [run.runId]);
    const current = tokenWith(run.token, { epoch: epoch + 1 });
    const calls = watchStore();

    await broker.publishEvent([runEvents(run).started(), ...reply(run, 'stale', 20)], { dispatchToken: run.token });
    const fresh = [runEvents(run).started(), ...reply(run, 'fresh', 3)];
    await broker.publishEvent(fresh, { dispatchToken: current });

    const rows = await waitForStored(run.runId, fresh.length);
    await waitUntil(queueEmpty);
    expect(rows.map((row) => row.payload)).toEqual(fresh);
    expect(calls.flatMap(({ outcome }) => (outcome.kind === 'stored' ? outcome.messages.map((message) => message.kind) : [outcome.kind]))).toEqual([
      'fenced',
      'persisted',
    ]);
    expect(await queueEmpty()).toBe(true);
    expect(await deadLetters()).toBe(0);
  });

  it('messages of one run waiting together are stored in one transaction, in order, each settled by its own outcome', async () => {
    const run = await newRun();
    const [{ epoch }] = (await testApp.owner.query(`SELECT epoch FROM agent_runs WHERE id = $1`, [run.runId])) as { epoch: number }[];
    // Every dispatch bumps the epoch, so the first step's is at least 1 and the one before it a real, superseded epoch.
    expect(epoch).toBeGreaterThanOrEqual(1);
    const opening = [runEvents(run).started()];
    const openingId = await broker.publishEvent(opening);
    await waitForStored(run.runId, 1);

    const calls = watchStore();
    const release = await holdRunLock(run.runId);
    // The first message's transaction waits for the lock; the others arrive meanwhile and wait in the ingest.
    const headId = await broker.publishEvent(reply(run, 'm1', 2));
    await waitUntil(async () => (await lockWaiters()) >= 1);
    const middle = reply(run, 'm2', 3);
    const middleId = await broker.publishEvent(middle);
    const duplicateId = await broker.publishEvent(opening, { messageId: openingId });
    const staleId = await broker.publishEvent([runEvents(run).text('m0', 'from a superseded step')], { dispatchToken: tokenWith(run.token, { epoch: epoch - 1 }) });
    const tail = [...reply(run, 'm3', 2), runEvents(run).finished()];
    const tailId = await broker.publishEvent(tail);
    const lateId = await broker.publishEvent([runEvents(run).text('m4', 'after the end')]);
    // Every message is in the ingest's hands (unacknowledged) before the lock goes.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await release();

    await waitUntil(() => calls.length >= 2 && calls.flatMap((call) => call.messageIds).length >= 6);
    await waitUntil(queueEmpty);
    expect(calls.map((call) => call.messageIds)).toEqual([[headId], [middleId, duplicateId, staleId, tailId, lateId]]);
    const outcomes = calls[1].outcome.kind === 'stored' ? calls[1].outcome.messages : [];
    expect(outcomes.map((outcome: MessageOutcome) => outcome.kind)).toEqual(['persisted', 'duplicate', 'fenced', 'persisted', 'fenced']);
    // The run ended with the tail: the message after it is refused as of a run no longer running.
    expect(outcomes[4]).toEqual({ kind: 'fenced', status: 'finished', epoch });

    const rows = await storedEvents(run.runId);
    expect(rows.map((row) => row.payload)).toEqual([...opening, ...reply(run, 'm1', 2), ...middle, ...tail].map(asStored));
    expect(rows.map((row) => row.seq)).toEqual(rows.map((_, index) => index + 1));
    expect(new Set(rows.slice(1 + 4).map((row) => row.tx)).size).toBe(1);
    expect(await queueEmpty()).toBe(true);
    expect(await deadLetters()).toBe(0);
  });

  it('NOTIFY is sent once per run per transaction, with the highest seq stored, not once per event', async () => {
    const run = await newRun();
    const batch = [runEvents(run).started(), ...reply(run, 'm1', 60)];
    await broker.publishEvent(batch);
    await waitForStored(run.runId, batch.length);
    await waitUntil(() => notifications.some((payload) => payload.startsWith(run.runId)));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(notifications.filter((payload) => payload.startsWith(run.runId))).toEqual([`${run.runId}:${batch.length}`]);

    // Two runs' rows in one statement: one notification each.
    const other = await newRun();
    notifications.length = 0;
    await testApp.owner.query(
      `INSERT INTO agent_run_events (run_id, seq, school_id, owner_id, message_id, type, payload)
       SELECT r.id, r.last_seq + n, r.school_id, r.owner_id, 'direct:' || n, 'CUSTOM', '{}'::jsonb
         FROM agent_runs r CROSS JOIN generate_series(1, 3) AS n WHERE r.id = ANY($1)`,
      [[run.runId, other.runId]],
    );
    await waitUntil(() => notifications.length >= 2);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(notifications.sort()).toEqual([`${run.runId}:${batch.length + 3}`, `${other.runId}:3`].sort());
  });

  it('a batch mixing runs, or naming a thread other than its token\'s, or whose token names another thread than the run\'s, is dead-lettered whole', async () => {
    const run = await newRun();
    const other = await newRun();
    const foreignThread = randomUUID();
    // Routed under the first run, with one event of the other run.
    await broker.publishEvent([runEvents(run).started(), runEvents(other).started()], { routingKey: run.runId });
    // One event of the batch names another thread than the token's.
    await broker.publishEvent([runEvents(run).started(), runEvents({ runId: run.runId, threadId: other.threadId }).text('m', 'x')]);
    // A token (validly signed) naming another thread than the run's, with the batch agreeing with the token.
    await broker.publishEvent([runEvents({ runId: run.runId, threadId: foreignThread }).started()], {
      dispatchToken: tokenWith(run.token, { threadId: foreignThread }),
    });
    // An empty batch, and one over the contract's bound.
    await broker.publishRaw(run.runId, Buffer.from(JSON.stringify({ events: [] })), randomUUID());
    const tooMany = Array.from({ length: RUN_EVENT_BATCH_MAX + 1 }, (_, index) => runEvents(run).text('m', `${index}`));
    await broker.publishRaw(run.runId, Buffer.from(JSON.stringify({ events: tooMany })), randomUUID());

    await waitUntil(async () => (await deadLetters()) >= 5);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await deadLetters()).toBe(5);
    expect(await storedEvents(run.runId)).toEqual([]);
    expect(await storedEvents(other.runId)).toEqual([]);
  });
});

describe('SSE over batches', () => {
  it('a stream reconnecting with a Last-Event-ID in the middle of a batch gets exactly the rest: nothing missed, nothing twice', async () => {
    const run = await newRun();
    const first = [runEvents(run).started(), ...reply(run, 'm1', 8)];
    await broker.publishEvent(first);
    await waitForStored(run.runId, first.length);

    const head = await openEventStream(testApp.app, testApp, schoolA.personas.teacher, run);
    streams.push(head);
    await head.waitFor(first.length);
    // The client kept only the first four events of the batch (its connection dropped in the middle of the chunk).
    head.close();
    const resumed = await openEventStream(testApp.app, testApp, schoolA.personas.teacher, run, '4');
    streams.push(resumed);
    await resumed.waitFor(first.length - 4);
    const second = [...reply(run, 'm2', 5), runEvents(run).finished()];
    await broker.publishEvent(second);
    await resumed.ended;

    const seen = [...head.events.slice(0, 4), ...resumed.events];
    expect(seen.map((event) => Number(event.id))).toEqual(Array.from({ length: first.length + second.length }, (_, index) => index + 1));
    expect(seen.map((event) => event.data)).toEqual([...first, ...second].map((event) => toRunStreamEvent(asStored(event))));
  });
});
