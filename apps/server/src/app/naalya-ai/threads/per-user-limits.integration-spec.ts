import type { INestApplication } from '@nestjs/common';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import type { TestApp } from '../../../testing/test-app.js';
import {
  agentRequest,
  createAgentTestApp,
  createPeerApp,
  createTestBroker,
  openEventStream,
  runEvents,
  storeAsWorker,
  type OpenStream,
  type TestBroker,
} from '../fixtures/agent-run-test-kit.js';

const THREADS = 3;
const RUNS_IN_FLIGHT = 2;
const STREAMS = 2;
const LIMITS = { AGENT_THREADS_PER_USER: THREADS, AGENT_RUNS_IN_FLIGHT_PER_USER: RUNS_IN_FLIGHT, AGENT_EVENT_STREAMS_PER_USER: STREAMS };

let broker: TestBroker;
let testApp: TestApp;
let peer: INestApplication;
let school: TestApp['demo']['schools'][0];
const streams: OpenStream[] = [];

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names, LIMITS);
  // A second replica on the same database: the thread and run limits are counted in PostgreSQL, so both see one count.
  peer = await createPeerApp(testApp, broker.names, { ingest: true, overrides: LIMITS });
  school = testApp.demo.schools[0];
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await peer?.close();
  await testApp?.close();
  await broker?.close();
});
beforeEach(async () => {
  await broker.channel.purgeQueue(broker.names.runsQueue);
});

const call = (persona: DemoPersona, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, app: INestApplication = testApp.app) =>
  agentRequest(app, testApp, persona, method, path, body);
const newThread = (persona: DemoPersona, app?: INestApplication) => call(persona, 'POST', '/agent/threads', {}, app);
const threadId = (answer: { body: unknown }) => (answer.body as { id: string }).id;
const startRun = (persona: DemoPersona, thread: string, body: Record<string, unknown> = { message: 'List my classes' }, app?: INestApplication) =>
  call(persona, 'POST', `/agent/threads/${thread}/runs`, body, app);
const ownerCount = async (sql: string, parameters: unknown[]) => ((await testApp.owner.query(sql, parameters)) as { count: number }[])[0].count;
const refusal = (code: 'THREAD_LIMIT' | 'RUNS_IN_FLIGHT_LIMIT' | 'EVENT_STREAM_LIMIT') => ({ status: 429, body: expect.objectContaining({ message: ERROR_SENTENCES[code], code }) });

describe('AGENT_THREADS_PER_USER', () => {
  it(`a user's conversation threads are counted across replicas: the ${THREADS + 1}th answers 429 THREAD_LIMIT, other users are unaffected`, async () => {
    const persona = school.personas.teacher;
    expect((await newThread(persona)).status).toBe(201);
    expect((await newThread(persona, peer)).status).toBe(201);
    // A direct run's thread is not a conversation: it does not count.
    expect((await call(persona, 'POST', '/agent/context', {})).status).toBe(200);
    expect((await newThread(persona)).status).toBe(201);
    expect(await newThread(persona, peer)).toEqual(refusal('THREAD_LIMIT'));
    expect(await newThread(persona)).toEqual(refusal('THREAD_LIMIT'));
    expect((await newThread(school.personas.subjectTeacher)).status).toBe(201);
  });

  it('concurrent creates on both replicas never pass the limit', async () => {
    const persona = school.personas.departmentHead;
    const threadsOf = () => ownerCount(`SELECT count(*)::int AS count FROM agent_threads WHERE owner_id = $1`, [persona.id]);
    expect((await newThread(persona)).status).toBe(201);
    const before = await threadsOf();
    const answers = await Promise.all(Array.from({ length: 6 }, (_, index) => newThread(persona, index % 2 ? peer : testApp.app)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 201, 429, 429, 429, 429]);
    expect((await threadsOf()) - before).toBe(THREADS - 1);
  });
});

describe('AGENT_RUNS_IN_FLIGHT_PER_USER', () => {
  it(`a user's runs running or queued are bounded across replicas: the next start answers 429 RUNS_IN_FLIGHT_LIMIT, records and publishes nothing; a finished run frees its slot`, async () => {
    const persona = school.personas.campusAdmin;
    const threads = [threadId(await newThread(persona)), threadId(await newThread(persona)), threadId(await newThread(persona))];
    const first = await startRun(persona, threads[0]);
    expect(first.status).toBe(201);
    // Queued behind the first in its own thread: queued runs count too.
    expect((await startRun(persona, threads[0], { message: 'And then', multitaskStrategy: 'enqueue' }, peer)).status).toBe(201);
    expect(await startRun(persona, threads[1], undefined, peer)).toEqual(refusal('RUNS_IN_FLIGHT_LIMIT'));
    expect(await startRun(persona, threads[2])).toEqual(refusal('RUNS_IN_FLIGHT_LIMIT'));
    expect(await ownerCount(`SELECT count(*)::int AS count FROM agent_runs WHERE thread_id = ANY ($1)`, [threads.slice(1)])).toBe(0);
    expect(await broker.runQueueDepth()).toBe(1);

    // The first run finishes and its queued successor starts: one in flight, one slot free.
    const ids = { threadId: threads[0], runId: (first.body as { runId: string }).runId };
    await storeAsWorker(testApp, ids, runEvents(ids).finished());
    expect((await startRun(persona, threads[1])).status).toBe(201);
    expect(await startRun(persona, threads[2])).toEqual(refusal('RUNS_IN_FLIGHT_LIMIT'));
  });

  it('concurrent starts in separate threads, on both replicas, never pass the limit', async () => {
    const persona = school.personas.directorOfStudies;
    const threads = await Promise.all(Array.from({ length: THREADS }, async () => threadId(await newThread(persona))));
    const answers = await Promise.all(threads.map((thread, index) => startRun(persona, thread, undefined, index % 2 ? peer : testApp.app)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 201, 429]);
    expect(await ownerCount(`SELECT count(*)::int AS count FROM agent_runs WHERE owner_id = $1 AND kind = 'agent'`, [persona.id])).toBe(RUNS_IN_FLIGHT);
  });
});

describe('AGENT_EVENT_STREAMS_PER_USER', () => {
  it(`a user may hold ${STREAMS} event streams open on a server: the next answers 429 EVENT_STREAM_LIMIT, and closing one frees its slot`, async () => {
    const persona = school.personas.subjectTeacher;
    const thread = threadId(await newThread(persona));
    const started = await startRun(persona, thread);
    const ids = { threadId: thread, runId: (started.body as { runId: string }).runId };
    for (let index = 0; index < STREAMS; index += 1) {
      const stream = await openEventStream(testApp.app, testApp, persona, ids);
      streams.push(stream);
      expect(stream.status).toBe(200);
    }
    const refused = await call(persona, 'GET', `/agent/threads/${ids.threadId}/runs/${ids.runId}/events`);
    expect(refused).toEqual(refusal('EVENT_STREAM_LIMIT'));
    streams.shift()?.close();
    const deadline = Date.now() + 5_000;
    let reopened = await openEventStream(testApp.app, testApp, persona, ids);
    while (reopened.status === 429 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      reopened = await openEventStream(testApp.app, testApp, persona, ids);
    }
    streams.push(reopened);
    expect(reopened.status).toBe(200);
  });
});
