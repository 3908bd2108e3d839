import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import type { INestApplication } from '@nestjs/common';
import { toRunStreamEvent, type AgentRunEvent } from '@naalya/agent-tools';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { tokenFor } from '../../../testing/rest-client.js';
import type { TestApp } from '../../../testing/test-app.js';
import { AgentRunIngest } from './agent-run-ingest.service.js';
import { LAST_EVENT_ID_ERROR } from './agent-run-stream.service.js';
import {
  asStored,
  agentRequest,
  createAgentTestApp,
  createPeerApp,
  createTestBroker,
  openEventStream,
  runEvents,
  type OpenStream,
  type TestBroker,
  storeAsWorker,
} from '../fixtures/agent-run-test-kit.js';

const run = promisify(execFile);

let broker: TestBroker;
let testApp: TestApp;
/** A second server instance on the same database and broker, consuming run events too. */
let peer: INestApplication;
let schoolA: TestApp['demo']['schools'][0];
const streams: OpenStream[] = [];

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names);
  peer = await createPeerApp(testApp, broker.names, { ingest: true });
  [schoolA] = testApp.demo.schools;
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await peer?.close();
  await testApp?.close();
  await broker?.close();
});
beforeEach(async () => {
  await broker.channel.purgeQueue(broker.names.deadLetterQueue);
});

type Ids = { runId: string; threadId: string };

const newRun = async (persona: DemoPersona = schoolA.personas.teacher): Promise<Ids> => {
  const thread = await agentRequest(testApp.app, testApp, persona, 'POST', '/agent/threads', {});
  const threadId = (thread.body as { id: string }).id;
  const started = await agentRequest(testApp.app, testApp, persona, 'POST', `/agent/threads/${threadId}/runs`, { message: 'Hello' });
  expect(started.status).toBe(201);
  await broker.takeRunRequest();
  return { threadId, runId: (started.body as { runId: string }).runId };
};

type StoredRow = { seq: number; type: string; payload: AgentRunEvent; message_id: string };

const storedEvents = (runId: string) =>
  testApp.owner.query(`SELECT seq, type, payload, message_id FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [runId]) as Promise<StoredRow[]>;

const waitUntil = async (check: () => Promise<boolean>, timeoutMs = 5_000) => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};
const waitForStored = async (runId: string, count: number, timeoutMs = 5_000) => {
  await waitUntil(async () => (await storedEvents(runId)).length >= count, timeoutMs);
  return storedEvents(runId);
};

const open = async (persona: DemoPersona, ids: Ids, lastEventId?: string, app: INestApplication = testApp.app) => {
  const stream = await openEventStream(app, testApp, persona, ids, lastEventId);
  streams.push(stream);
  return stream;
};

/** Publishes `count` text deltas numbered from `from`, as one worker step would, and returns them. */
const publishTexts = async (ids: Ids, from: number, count: number) => {
  const events = Array.from({ length: count }, (_, index) => runEvents(ids).text('m1', `delta ${from + index}`));
  for (const event of events) await broker.publishEvent(event);
  return events;
};

describe('ingest: run events from the exchange', () => {
  it('persists each event once, in publish order, with a gapless seq per run, with two ingest consumers and duplicate deliveries', async () => {
    const runs = [await newRun(), await newRun(), await newRun()];
    const published = new Map<string, AgentRunEvent[]>(runs.map((ids) => [ids.runId, []]));
    const messageIds: { ids: Ids; event: AgentRunEvent; messageId: string }[] = [];
    // Interleaved across runs, as concurrent steps of different users publish.
    for (let index = 0; index < 40; index += 1) {
      for (const ids of runs) {
        const event = index === 0 ? runEvents(ids).started() : index === 39 ? runEvents(ids).finished() : runEvents(ids).text('m1', `delta ${index}`);
        const messageId = await broker.publishEvent(event);
        published.get(ids.runId)?.push(event);
        messageIds.push({ ids, event, messageId });
        // A redelivered message carries its message id again: the second copy stores nothing.
        if (index % 7 === 3) await broker.publishEvent(event, { messageId });
      }
    }

    for (const ids of runs) {
      const rows = await waitForStored(ids.runId, 40);
      expect(rows.map((row) => row.seq)).toEqual(Array.from({ length: 40 }, (_, index) => index + 1));
      expect(rows.map((row) => row.payload)).toEqual(published.get(ids.runId)?.map(asStored));
    }
    // Let any straggling duplicate be handled, then check nothing was added and nothing was refused.
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const ids of runs) expect(await storedEvents(ids.runId)).toHaveLength(40);
    expect((await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount).toBe(0);
    expect(await testApp.owner.query(`SELECT status, last_seq FROM agent_runs WHERE id = ANY($1)`, [runs.map((ids) => ids.runId)])).toEqual(
      runs.map(() => ({ status: 'finished', last_seq: 40 })),
    );
  });

  it('an event stored before a crash, then redelivered with its message id, is acknowledged without a second row', async () => {
    const ids = await newRun();
    const event = runEvents(ids).started();
    const messageId = randomUUID();
    // Committed, but the ack never reached the broker: the broker delivers it again.
    await storeAsWorker(testApp, ids, event, messageId);
    await broker.publishEvent(event, { messageId });
    await broker.publishEvent(runEvents(ids).finished());

    const rows = await waitForStored(ids.runId, 2);
    expect(rows.map((row) => [row.seq, row.type])).toEqual([
      [1, 'RUN_STARTED'],
      [2, 'RUN_FINISHED'],
    ]);
  });

  it('when the consuming connections drop mid-stream, nothing is lost, repeated or reordered', async () => {
    const ids = await newRun();
    const { stdout } = await run('rabbitmqctl', ['list_connections', '-s', 'pid', 'client_properties']);
    const pids = stdout
      .split('\n')
      .filter((line) => line.includes('"naalya-server-run-events"'))
      .map((line) => line.split('\t')[0] ?? '');
    expect(pids.length).toBeGreaterThanOrEqual(2);

    // Events keep flowing while the broker closes both instances' ingest connections, and for a while after.
    const events: AgentRunEvent[] = [];
    let closedAt: number | null = null;
    const publishing = (async () => {
      while (closedAt === null || events.length < closedAt + 40) {
        const event = runEvents(ids).text('m1', `delta ${events.length}`);
        events.push(event);
        await broker.publishEvent(event);
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
    })();
    await waitUntil(async () => (await storedEvents(ids.runId)).length >= 10);
    await Promise.all(pids.map((pid) => run('rabbitmqctl', ['close_connection', pid, 'closed by a test'])));
    closedAt = events.length;
    await publishing;

    const rows = await waitForStored(ids.runId, events.length, 15_000);
    expect(rows.map((row) => row.seq)).toEqual(events.map((_, index) => index + 1));
    expect(rows.map((row) => row.payload)).toEqual(events);
  }, 30_000);

  it('dead-letters a malformed event, one routed under another run, one without a message id, one naming another thread, and one for no run, storing nothing', async () => {
    const ids = await newRun();
    const other = await newRun();
    await broker.publishRaw(ids.runId, Buffer.from('not json'), randomUUID());
    await broker.publishRaw(ids.runId, Buffer.from(JSON.stringify({ events: [{ ...runEvents(ids).started(), role: 'admin' }] })), randomUUID());
    await broker.publishEvent(runEvents(ids).started(), { routingKey: other.runId });
    await broker.publishRaw(ids.runId, Buffer.from(JSON.stringify({ events: [runEvents(ids).started()] })));
    await broker.publishEvent(runEvents({ runId: ids.runId, threadId: other.threadId }).started());
    const ghost = { runId: randomUUID(), threadId: ids.threadId };
    await broker.publishEvent(runEvents(ghost).started());

    await waitUntil(async () => (await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount >= 6);
    expect((await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount).toBe(6);
    expect(await storedEvents(ids.runId)).toEqual([]);
    expect(await storedEvents(other.runId)).toEqual([]);
  });

  it('dead-letters an event for a run that does not exist at once, storing nothing: a real run is committed before its first step is published', async () => {
    const ghost = { runId: randomUUID(), threadId: randomUUID() };
    const startedAt = Date.now();
    await broker.publishEvent(runEvents(ghost).started());

    await waitUntil(async () => (await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount >= 1);
    // No wait for the run to appear: a run waited for would take seconds.
    expect(Date.now() - startedAt).toBeLessThan(2_500);
    expect((await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount).toBe(1);
    expect(await storedEvents(ghost.runId)).toEqual([]);
  });

  it("dead-letters a run event published without the worker's user_id (a forged publisher), storing nothing, and stores the same event signed", async () => {
    const ids = await newRun();
    const deadLettersBefore = (await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount;
    await broker.publishEvent(runEvents(ids).started(), { unsigned: true });
    await waitUntil(async () => (await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount > deadLettersBefore, 8_000);
    expect((await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount).toBe(deadLettersBefore + 1);
    expect(await storedEvents(ids.runId)).toEqual([]);

    await broker.publishEvent(runEvents(ids).started());
    expect((await waitForStored(ids.runId, 1, 8_000)).map((row) => row.seq)).toEqual([1]);
  }, 20_000);

  it('RUN_FINISHED with an interrupt marks the run interrupted with its questions, each stamped with the run\'s expiry; RUN_ERROR marks it failed', async () => {
    const ids = await newRun();
    await broker.publishEvent(runEvents(ids).started());
    const paused = runEvents(ids).interrupted([{ interruptId: 'which', question: 'Which campus?' }]);
    // Whatever the worker says about the expiry, the server's instant is the one stored.
    if (paused.type === 'RUN_FINISHED' && paused.outcome.type === 'interrupt') paused.outcome.interrupts[0].expiresAt = '2000-01-01T00:00:00.000Z';
    await broker.publishEvent(paused);
    const rows = await waitForStored(ids.runId, 2);
    const [{ expires_at: expiresAt }] = (await testApp.owner.query(`SELECT expires_at FROM agent_runs WHERE id = $1`, [ids.runId])) as { expires_at: Date }[];
    expect(expiresAt.getTime() - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
    expect(rows[1].payload).toMatchObject({ outcome: { type: 'interrupt', interrupts: [{ id: 'which', expiresAt: expiresAt.toISOString() }] } });
    const detail = await agentRequest(testApp.app, testApp, schoolA.personas.teacher, 'GET', `/agent/threads/${ids.threadId}`);
    expect(detail.body).toMatchObject({
      runs: [{ id: ids.runId, status: 'interrupted', interrupts: [{ interruptId: 'which', question: 'Which campus?', askedBy: 'rover', answered: false }] }],
    });

    const failing = await newRun();
    await broker.publishEvent(runEvents(failing).failed('The step took too long.'));
    await waitForStored(failing.runId, 1);
    expect(await testApp.owner.query(`SELECT status, error FROM agent_runs WHERE id = $1`, [failing.runId])).toEqual([
      { status: 'failed', error: 'The step took too long.' },
    ]);
  });
});

describe('SSE: GET /agent/threads/:threadId/runs/:runId/events', () => {
  it('replays the stored events as id/event/data, then ends at RUN_FINISHED', async () => {
    const ids = await newRun();
    const events = [runEvents(ids).started(), ...Array.from({ length: 5 }, (_, index) => runEvents(ids).text('m1', `part ${index}`)), runEvents(ids).finished()];
    for (const event of events) await broker.publishEvent(event);
    await waitForStored(ids.runId, events.length);

    const stream = await open(schoolA.personas.teacher, ids);
    await stream.ended;

    expect(stream.status).toBe(200);
    expect(stream.contentType).toMatch(/^text\/event-stream/);
    // On the wire each event has AG-UI's own shape: run and thread ids only where AG-UI defines them.
    expect(stream.events).toEqual(events.map((event, index) => ({ id: String(index + 1), event: event.type, data: toRunStreamEvent(asStored(event)) })));
  });

  it('resumes after Last-Event-ID with nothing missed or repeated, follows live events, and ends at RUN_FINISHED', async () => {
    const ids = await newRun();
    await broker.publishEvent(runEvents(ids).started());
    const early = await publishTexts(ids, 1, 4);
    await waitForStored(ids.runId, 5);

    // A client saw events 1 and 2, lost its connection and comes back.
    const resumed = await open(schoolA.personas.teacher, ids, '2');
    await resumed.waitFor(3);
    expect(resumed.events.map((event) => event.id)).toEqual(['3', '4', '5']);
    expect(resumed.hasEnded()).toBe(false);

    const late = await publishTexts(ids, 5, 3);
    await broker.publishEvent(runEvents(ids).finished());
    await resumed.ended;
    expect(resumed.events.map((event) => event.id)).toEqual(['3', '4', '5', '6', '7', '8', '9']);
    expect(resumed.events.map((event) => event.data)).toEqual([...early.slice(1), ...late, runEvents(ids).finished()].map((event) => toRunStreamEvent(asStored(event))));

    // Two reconnections in a row cover the whole run exactly once.
    const head = await open(schoolA.personas.teacher, ids);
    await head.waitFor(4);
    head.close();
    const tail = await open(schoolA.personas.teacher, ids, head.events.at(-1)?.id);
    await tail.ended;
    const seen = [...head.events, ...tail.events].map((event) => Number(event.id));
    expect(seen).toEqual(Array.from({ length: 9 }, (_, index) => index + 1));
  });

  it('an event stored by another server instance reaches a stream held by this one, through LISTEN/NOTIFY', async () => {
    const ids = await newRun();
    await broker.publishEvent(runEvents(ids).started());
    await waitForStored(ids.runId, 1);
    // From here only the peer consumes run events: this instance learns of them from PostgreSQL alone.
    await testApp.app.get(AgentRunIngest).close();

    const stream = await open(schoolA.personas.teacher, ids);
    await stream.waitFor(1);
    const startedAt = Date.now();
    await broker.publishEvent(runEvents(ids).text('m1', 'from the peer'));
    // Well inside the 15 s safety re-read: only the notification can have delivered it.
    await stream.waitFor(2, 3_000);
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect(stream.events[1]).toMatchObject({ id: '2', event: 'TEXT_MESSAGE_CONTENT', data: { delta: 'from the peer' } });

    // A row inserted by anything at all (here the owner, directly) is pushed the same way.
    await testApp.owner.query(
      `INSERT INTO agent_run_events (run_id, seq, school_id, owner_id, message_id, type, payload)
       SELECT id, last_seq + 1, school_id, owner_id, 'direct', 'CUSTOM', $2 FROM agent_runs WHERE id = $1`,
      [ids.runId, JSON.stringify({ ...ids, type: 'CUSTOM', name: 'direct', value: {} })],
    );
    await testApp.owner.query(`UPDATE agent_runs SET last_seq = last_seq + 1 WHERE id = $1`, [ids.runId]);
    await stream.waitFor(3, 3_000);
    expect(stream.events[2]).toMatchObject({ id: '3', event: 'CUSTOM' });

    await broker.publishEvent(runEvents(ids).finished());
    await stream.ended;
    expect(stream.events.map((event) => event.id)).toEqual(['1', '2', '3', '4']);
  });

  it('a stream is also served by the peer, and holds no transaction open while it waits', async () => {
    const ids = await newRun();
    await broker.publishEvent(runEvents(ids).started());
    await waitForStored(ids.runId, 1);
    const stream = await open(schoolA.personas.teacher, ids, undefined, peer);
    await stream.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));

    const activity = (await testApp.owner.query(
      `SELECT state, application_name FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND usename <> current_user`,
    )) as { state: string; application_name: string }[];
    expect(activity.filter((connection) => connection.state?.startsWith('idle in transaction'))).toEqual([]);
    expect(activity.filter((connection) => connection.application_name === 'naalya-run-events-listener').length).toBeGreaterThanOrEqual(1);

    await broker.publishEvent(runEvents(ids).finished());
    await stream.ended;
    expect(stream.events.map((event) => event.event)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
  });

  it("another user's stream reads as 404, and a Last-Event-ID that is not an event id as 400", async () => {
    const ids = await newRun();
    for (const intruder of [schoolA.personas.schoolAdmin, testApp.demo.schools[1].personas.schoolAdmin, testApp.demo.platformAdmin]) {
      expect((await open(intruder, ids)).status).toBe(404);
    }
    expect((await open(schoolA.personas.teacher, { ...ids, runId: randomUUID() })).status).toBe(404);
    const response = await fetch(`${await testApp.app.getUrl()}/agent/threads/${ids.threadId}/runs/${ids.runId}/events`, {
      headers: { authorization: `Bearer ${tokenFor(testApp, schoolA.personas.teacher)}`, 'last-event-id': 'abc' },
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ message: LAST_EVENT_ID_ERROR, code: 'INVALID_LAST_EVENT_ID' });
  });
});
