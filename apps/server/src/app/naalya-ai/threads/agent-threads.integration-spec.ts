import { randomUUID } from 'node:crypto';
import { Controller, Module, ServiceUnavailableException } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Test } from '@nestjs/testing';
import {
  AGENT_RUN_PATTERN,
  AGENT_TOOL_ROLES,
  agentRunRequestSchema,
  toolsForMode,
  toolsForRole,
  type AgentMap,
  type AgentRunEvent,
  type AgentRunRequest,
} from '@naalya/agent-tools';
import { AckAfterReplyTransport } from '@naalya/rmq';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import type { TestApp } from '../../../testing/test-app.js';
import { AGENT_UNAVAILABLE_ERROR, AgentRunPublisher } from '../dispatch/agent-run-publisher.service.js';
import { ALREADY_ANSWERED_ERROR, RUN_IN_PROGRESS_ERROR, STALE_INTERRUPT_ERROR, UNKNOWN_INTERRUPT_ERROR } from '../runs/agent-run-store.service.js';
import { THREAD_NOT_FOUND_ERROR } from './agent-threads.service.js';
import {
  RMQ_URL,
  agentRequest,
  createAgentTestApp,
  createTestBroker,
  isRunPacket,
  openEventStream,
  runEvents,
  type TestBroker,
  storeAsWorker,
} from '../fixtures/agent-run-test-kit.js';

let broker: TestBroker;
let testApp: TestApp;
let schoolA: TestApp['demo']['schools'][0];
let schoolB: TestApp['demo']['schools'][1];

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names);
  [schoolA, schoolB] = testApp.demo.schools;
});
afterAll(async () => {
  await testApp?.close();
  await broker?.close();
});
beforeEach(async () => {
  await broker.channel.purgeQueue(broker.names.runsQueue);
});

const call = (persona: DemoPersona, method: 'GET' | 'POST', path: string, body?: unknown) =>
  agentRequest(testApp.app, testApp, persona, method, path, body);

const newThread = async (persona: DemoPersona): Promise<string> => {
  const created = await call(persona, 'POST', '/agent/threads', {});
  expect(created.status).toBe(201);
  return (created.body as { id: string }).id;
};

const startRun = (persona: DemoPersona, threadId: string, body: Record<string, unknown> = { message: 'List my classes' }) =>
  call(persona, 'POST', `/agent/threads/${threadId}/runs`, body);

/** A thread with a started run, its request taken off the queue. */
const newRun = async (persona: DemoPersona, body?: Record<string, unknown>) => {
  const threadId = await newThread(persona);
  const started = await startRun(persona, threadId, body);
  expect(started.status).toBe(201);
  const { runId } = started.body as { runId: string };
  const { request } = await broker.takeRunRequest();
  return { threadId, runId, request };
};

const resume = (persona: DemoPersona, threadId: string, interruptId: string, answer = 'Yes') =>
  call(persona, 'POST', `/agent/threads/${threadId}/resume`, { interruptId, answer });

const store = (ids: { runId: string; threadId: string }, event: AgentRunEvent) => storeAsWorker(testApp, ids, event);

const ask = (ids: { runId: string; threadId: string }, ...interruptIds: string[]) =>
  store(ids, runEvents(ids).interrupted(interruptIds.map((interruptId) => ({ interruptId, question: `Question ${interruptId}?` }))));

const ownerRows = (sql: string, parameters: unknown[]) => testApp.owner.query(sql, parameters) as Promise<Record<string, unknown>[]>;

describe('threads belong to their owner', () => {
  it('the server makes thread ids: a client-chosen id is refused', async () => {
    const chosen = await call(schoolA.personas.teacher, 'POST', '/agent/threads', { id: randomUUID() });
    expect(chosen.status).toBe(400);

    const threadId = await newThread(schoolA.personas.teacher);
    expect(threadId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await ownerRows(`SELECT school_id, owner_id FROM agent_threads WHERE id = $1`, [threadId])).toEqual([
      { school_id: schoolA.id, owner_id: schoolA.personas.teacher.id },
    ]);
  });

  it('another user cannot read, list, post to, resume or stream a thread: each reads as 404', async () => {
    const owner = schoolA.personas.teacher;
    const { threadId, runId } = await newRun(owner);
    await ask({ runId, threadId }, 'q1');
    const intruders = [schoolA.personas.schoolAdmin, schoolA.personas.departmentHead, schoolB.personas.schoolAdmin, testApp.demo.platformAdmin];

    for (const intruder of intruders) {
      expect(await call(intruder, 'GET', `/agent/threads/${threadId}`)).toMatchObject({ status: 404, body: { message: THREAD_NOT_FOUND_ERROR, code: 'THREAD_NOT_FOUND' } });
      expect((await call(intruder, 'GET', '/agent/threads')).body).not.toContainEqual(expect.objectContaining({ id: threadId }));
      expect((await startRun(intruder, threadId)).status).toBe(404);
      expect((await resume(intruder, threadId, 'q1')).status).toBe(404);
      const stream = await openEventStream(testApp.app, testApp, intruder, { threadId, runId });
      expect(stream.status).toBe(404);
    }
    expect(await broker.runQueueDepth()).toBe(0);
    const [run] = await ownerRows(`SELECT status, pending_interrupts FROM agent_runs WHERE id = $1`, [runId]);
    expect(run).toMatchObject({ status: 'interrupted', pending_interrupts: [expect.objectContaining({ interruptId: 'q1', answered: false })] });
    // The owner still sees it all.
    expect((await call(owner, 'GET', `/agent/threads/${threadId}`)).body).toMatchObject({ id: threadId, runs: [{ id: runId, status: 'interrupted' }] });
    expect((await call(owner, 'GET', '/agent/threads')).body).toContainEqual(expect.objectContaining({ id: threadId }));
  });

  it('an id that is not a uuid reads as 404 too', async () => {
    expect((await call(schoolA.personas.teacher, 'GET', '/agent/threads/not-a-thread')).status).toBe(404);
  });

  it('refuses a request without a valid token', async () => {
    const response = await fetch(`${await testApp.app.getUrl()}/agent/threads`);
    expect(response.status).toBe(401);
  });
});

describe('starting a run', () => {
  it('publishes a run request whose context the server minted: identity from the JWT, the campus, the new run and thread ids', async () => {
    const caller = schoolA.personas.campusAdmin;
    const campus = schoolA.campuses[0];
    const threadId = await newThread(caller);

    const started = await startRun(caller, threadId, { message: 'Create a department called Sciences', campusId: campus.id });

    expect(started.status).toBe(201);
    const { runId } = started.body as { runId: string };
    const { message, packet, request } = await broker.takeRunRequest();
    expect(isRunPacket(packet)).toBe(true);
    expect(message.properties).toMatchObject({ deliveryMode: 2, correlationId: runId, contentType: 'application/json' });
    expect(request).toMatchObject({
      kind: 'start',
      message: 'Create a department called Sciences',
      context: {
        userDetails: { id: caller.id, userType: caller.type, schoolId: caller.schoolId, campusId: caller.campusId, email: caller.email },
        runMode: { mode: 'campus', campus: { id: campus.id, name: campus.name } },
        run: { runId, threadId },
      },
    });
    expect(await ownerRows(`SELECT status, school_id, owner_id, campus_id FROM agent_runs WHERE id = $1`, [runId])).toEqual([
      { status: 'running', school_id: schoolA.id, owner_id: caller.id, campus_id: campus.id },
    ]);
  });

  it('refuses a campus the caller may not act in, or a target school from staff, and records and publishes nothing', async () => {
    const caller = schoolA.personas.campusAdmin;
    const threadId = await newThread(caller);

    expect((await startRun(caller, threadId, { message: 'Hello', campusId: schoolA.campuses[1].id })).status).toBe(403);
    expect((await startRun(caller, threadId, { message: 'Hello', campusId: schoolB.campuses[0].id })).status).toBe(404);
    expect((await startRun(caller, threadId, { message: 'Hello', targetSchoolId: schoolB.id })).status).toBe(403);
    expect((await startRun(caller, threadId, { message: 'Hello', userId: schoolB.personas.schoolAdmin.id })).status).toBe(400);

    expect(await broker.runQueueDepth()).toBe(0);
    expect(await ownerRows(`SELECT id FROM agent_runs WHERE thread_id = $1`, [threadId])).toEqual([]);
  });

  it('a second run on a thread with an active run gets 409; of concurrent starts exactly one wins', async () => {
    const caller = schoolA.personas.teacher;
    const { threadId } = await newRun(caller);
    expect(await startRun(caller, threadId)).toMatchObject({ status: 409, body: { message: RUN_IN_PROGRESS_ERROR, code: 'RUN_IN_PROGRESS' } });

    const raceThread = await newThread(caller);
    const answers = await Promise.all(Array.from({ length: 6 }, () => startRun(caller, raceThread)));
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
    expect(await ownerRows(`SELECT count(*)::int AS count FROM agent_runs WHERE thread_id = $1`, [raceThread])).toEqual([{ count: 1 }]);
    expect(await broker.runQueueDepth()).toBe(1);
  });

  it('an interrupted run also holds the thread; a finished or failed one releases it', async () => {
    const caller = schoolA.personas.teacher;
    const ids = await newRun(caller);
    await ask(ids, 'hold');
    expect((await startRun(caller, ids.threadId)).status).toBe(409);

    expect((await call(caller, 'POST', `/agent/threads/${ids.threadId}/runs/${ids.runId}/cancel`)).status).toBe(200);
    const failing = await startRun(caller, ids.threadId, { message: 'Try again' });
    expect(failing.status).toBe(201);
    await broker.takeRunRequest();
    const failingIds = { threadId: ids.threadId, runId: (failing.body as { runId: string }).runId };
    await store(failingIds, runEvents(failingIds).failed('The model gave up.'));
    const next = await startRun(caller, ids.threadId, { message: 'Try again' });
    expect(next.status).toBe(201);
    await broker.takeRunRequest();
    const nextIds = { threadId: ids.threadId, runId: (next.body as { runId: string }).runId };
    await store(nextIds, runEvents(nextIds).finished());
    expect((await startRun(caller, ids.threadId, { message: 'And again' })).status).toBe(201);
  });

  it('platform admins own school-less threads; a target school is checked by the server and minted into the context', async () => {
    const admin = testApp.demo.platformAdmin;
    const threadId = await newThread(admin);
    expect(await ownerRows(`SELECT school_id, owner_id FROM agent_threads WHERE id = $1`, [threadId])).toEqual([{ school_id: null, owner_id: admin.id }]);

    expect((await startRun(admin, threadId, { message: 'Hello', targetSchoolId: randomUUID() })).status).toBe(404);
    const started = await startRun(admin, threadId, { message: 'Create a department called Sciences', targetSchoolId: schoolB.id });
    expect(started.status).toBe(201);
    const { request } = await broker.takeRunRequest();
    expect(request.context).toMatchObject({
      userDetails: { id: admin.id, userType: admin.type, schoolId: null },
      runMode: { mode: 'school', targetSchoolId: schoolB.id },
      run: { runId: (started.body as { runId: string }).runId, threadId },
    });
    expect((await call(admin, 'GET', `/agent/threads/${threadId}`)).body).toMatchObject({ runs: [{ status: 'running', targetSchoolId: schoolB.id }] });
    expect((await call(schoolB.personas.schoolAdmin, 'GET', `/agent/threads/${threadId}`)).status).toBe(404);
  });

  it("the run request is a Nest event packet that the worker's AckAfterReplyTransport routes to @EventPattern(AGENT_RUN_PATTERN)", async () => {
    const received: AgentRunRequest[] = [];
    @Controller()
    class RunConsumer {
      @EventPattern(AGENT_RUN_PATTERN)
      onRun(@Payload() data: unknown) {
        received.push(agentRunRequestSchema.parse(data));
      }
    }
    @Module({ controllers: [RunConsumer] })
    class WorkerModule {}
    const module = await Test.createTestingModule({ imports: [WorkerModule] }).compile();
    const worker = module.createNestMicroservice({
      strategy: new AckAfterReplyTransport({
        url: RMQ_URL,
        queue: broker.names.runsQueue,
        prefetch: 1,
        deadLetterExchange: broker.names.deadLetterExchange,
        handlerTimeoutMs: 5_000,
        drainTimeoutMs: 1_000,
      }),
      logger: false,
    });
    await worker.listen();
    try {
      const threadId = await newThread(schoolA.personas.teacher);
      const { runId } = (await startRun(schoolA.personas.teacher, threadId, { message: 'Hello Rover' })).body as { runId: string };
      const deadline = Date.now() + 3_000;
      while (received.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(received).toEqual([expect.objectContaining({ kind: 'start', message: 'Hello Rover', context: expect.objectContaining({ run: { runId, threadId } }) })]);
      expect(await broker.runQueueDepth()).toBe(0);
      expect((await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount).toBe(0);
    } finally {
      await worker.close();
    }
  });
});

describe('resuming a run', () => {
  it('refuses an unknown interrupt, a duplicate answer and a stale question with 409', async () => {
    const caller = schoolA.personas.teacher;
    const ids = await newRun(caller);
    await ask(ids, 'first');

    expect(await resume(caller, ids.threadId, 'never-asked')).toMatchObject({ status: 409, body: { message: UNKNOWN_INTERRUPT_ERROR, code: 'UNKNOWN_INTERRUPT' } });
    expect(await resume(caller, ids.threadId, 'first', 'Sciences')).toMatchObject({ status: 200, body: { runId: ids.runId, resumed: true } });
    const { request } = await broker.takeRunRequest();
    expect(request).toMatchObject({ kind: 'resume', answers: { first: 'Sciences' } });
    expect(await resume(caller, ids.threadId, 'first', 'Mathematics')).toMatchObject({ status: 409, body: { message: ALREADY_ANSWERED_ERROR, code: 'ALREADY_ANSWERED' } });

    // The resumed step asks again, then the user stops the run: its question is left unanswered by a run that has ended.
    await ask(ids, 'second');
    expect((await call(caller, 'POST', `/agent/threads/${ids.threadId}/runs/${ids.runId}/cancel`)).status).toBe(200);
    expect(await resume(caller, ids.threadId, 'second')).toMatchObject({ status: 409, body: { message: STALE_INTERRUPT_ERROR, code: 'STALE_INTERRUPT' } });
    expect(await broker.runQueueDepth()).toBe(0);
  });

  it('accepts several pending questions by id, and publishes one resume with a re-minted context once the last is answered', async () => {
    const caller = schoolA.personas.campusAdmin;
    const campus = schoolA.campuses[0];
    const ids = await newRun(caller, { message: 'Set up the term', campusId: campus.id });
    await ask(ids, 'a', 'b', 'c');

    expect(await resume(caller, ids.threadId, 'b', 'Beta')).toMatchObject({ status: 200, body: { resumed: false, pendingInterruptIds: ['a', 'c'] } });
    expect(await resume(caller, ids.threadId, 'a', 'Alpha')).toMatchObject({ status: 200, body: { resumed: false, pendingInterruptIds: ['c'] } });
    expect(await broker.runQueueDepth()).toBe(0);
    expect(await resume(caller, ids.threadId, 'c', 'Gamma')).toMatchObject({ status: 200, body: { resumed: true, pendingInterruptIds: [] } });

    const { request } = await broker.takeRunRequest();
    expect(request).toEqual({ kind: 'resume', answers: { a: 'Alpha', b: 'Beta', c: 'Gamma' }, context: expect.anything() });
    expect(request.context).toMatchObject({
      userDetails: { id: caller.id, campusId: caller.campusId },
      runMode: { mode: 'campus', campus: { id: campus.id } },
      run: { runId: ids.runId, threadId: ids.threadId },
    });
    expect(await broker.runQueueDepth()).toBe(0);
    expect(await ownerRows(`SELECT status FROM agent_runs WHERE id = $1`, [ids.runId])).toEqual([{ status: 'running' }]);

    // The next pause sends only its own answers.
    await ask(ids, 'd');
    expect((await resume(caller, ids.threadId, 'd', 'Delta')).status).toBe(200);
    expect((await broker.takeRunRequest()).request).toMatchObject({ kind: 'resume', answers: { d: 'Delta' } });
  });

  it('of concurrent answers to one question exactly one is accepted, and one resume is published', async () => {
    const caller = schoolA.personas.teacher;
    const ids = await newRun(caller);
    await ask(ids, 'only');

    const answers = await Promise.all(Array.from({ length: 6 }, (_, index) => resume(caller, ids.threadId, 'only', `Answer ${index}`)));

    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect(await broker.runQueueDepth()).toBe(1);
  });
});

describe('a run step is published only once it is committed', () => {
  afterEach(() => vi.restoreAllMocks());

  /** What another connection (the worker's first tool call, in production) reads of the run while it is published. */
  const seenAtPublish = () => {
    const publisher = testApp.module.get(AgentRunPublisher);
    const publish = publisher.publish.bind(publisher);
    const seen: Record<string, unknown>[][] = [];
    vi.spyOn(publisher, 'publish').mockImplementation(async (request: AgentRunRequest) => {
      seen.push(await ownerRows(`SELECT status, pending_interrupts FROM agent_runs WHERE id = $1`, [request.context.run.runId]));
      return publish(request);
    });
    return seen;
  };

  it('a new run reads as running from any connection by the time its request is published', async () => {
    const seen = seenAtPublish();
    const { runId } = await newRun(schoolA.personas.teacher);
    expect(seen).toEqual([[{ status: 'running', pending_interrupts: [] }]]);
    expect(runId).toBeTruthy();
  });

  it('a resumed run reads as running, its answer recorded, by the time the resume is published', async () => {
    const ids = await newRun(schoolA.personas.teacher);
    await ask(ids, 'q');
    const seen = seenAtPublish();
    expect((await resume(schoolA.personas.teacher, ids.threadId, 'q', 'Yes')).status).toBe(200);
    expect(seen).toEqual([[{ status: 'running', pending_interrupts: [expect.objectContaining({ interruptId: 'q', answered: true, answer: 'Yes' })] }]]);
    await broker.takeRunRequest();
  });

  it('a step the broker does not take answers 503, fails its run with the unavailable sentence, and frees the thread', async () => {
    const caller = schoolA.personas.teacher;
    const threadId = await newThread(caller);
    vi.spyOn(testApp.module.get(AgentRunPublisher), 'publish').mockRejectedValueOnce(new ServiceUnavailableException(AGENT_UNAVAILABLE_ERROR));
    expect(await startRun(caller, threadId)).toMatchObject({ status: 503, body: { message: AGENT_UNAVAILABLE_ERROR, code: 'UNAVAILABLE' } });
    expect(await ownerRows(`SELECT status, error FROM agent_runs WHERE thread_id = $1`, [threadId])).toEqual([{ status: 'failed', error: AGENT_UNAVAILABLE_ERROR }]);
    expect(await broker.runQueueDepth()).toBe(0);

    expect((await startRun(caller, threadId)).status).toBe(201);
    expect((await broker.takeRunRequest()).request).toMatchObject({ kind: 'start' });
  });
});

describe('row-level security on threads, runs and events', () => {
  const asAppRole = async <T>(settings: { schoolId?: string; userId?: string; platform?: boolean }, fn: (client: pg.Client) => Promise<T>) => {
    const client = new pg.Client({ connectionString: testApp.database.appUrl });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SELECT set_config('app.school_id', $1, true), set_config('app.user_id', $2, true), set_config('app.platform', $3, true)`, [
        settings.schoolId ?? '',
        settings.userId ?? '',
        settings.platform ? 'on' : '',
      ]);
      return await fn(client);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end();
    }
  };
  const countRows = (client: pg.Client, ids: { runId: string; threadId: string }) =>
    client
      .query<{ threads: number; runs: number; events: number }>(
        `SELECT (SELECT count(*)::int FROM agent_threads WHERE id = $1) AS threads,
                (SELECT count(*)::int FROM agent_runs WHERE id = $2) AS runs,
                (SELECT count(*)::int FROM agent_run_events WHERE run_id = $2) AS events`,
        [ids.threadId, ids.runId],
      )
      .then((result) => result.rows[0]);

  it("a user of another school cannot read a school's threads, runs or events, even querying the tables directly", async () => {
    const ids = await newRun(schoolA.personas.teacher);
    await store(ids, runEvents(ids).started());
    const intruder = schoolB.personas.schoolAdmin;

    expect((await call(intruder, 'GET', `/agent/threads/${ids.threadId}`)).status).toBe(404);
    expect(await asAppRole({ schoolId: schoolB.id, userId: intruder.id }, (client) => countRows(client, ids))).toEqual({ threads: 0, runs: 0, events: 0 });
    expect(await asAppRole({ schoolId: schoolA.id, userId: schoolA.personas.teacher.id }, (client) => countRows(client, ids))).toEqual({
      threads: 1,
      runs: 1,
      events: 1,
    });
  });

  it("a colleague in the same school sees none of the owner's rows, even through a query without an owner filter", async () => {
    const ids = await newRun(schoolA.personas.teacher);
    await store(ids, runEvents(ids).started());
    const colleague = schoolA.personas.schoolAdmin;
    expect(await asAppRole({ schoolId: schoolA.id, userId: colleague.id }, (client) => countRows(client, ids))).toEqual({ threads: 0, runs: 0, events: 0 });
    await asAppRole({ schoolId: schoolA.id, userId: colleague.id }, async (client) => {
      const updated = await client.query(`UPDATE agent_runs SET status = 'finished' WHERE id = $1`, [ids.runId]);
      expect(updated.rowCount).toBe(0);
    });
  });

  it("a member of staff cannot write a school-less row, nor a row in another owner's name", async () => {
    const teacher = schoolA.personas.teacher;
    await asAppRole({ schoolId: schoolA.id, userId: teacher.id }, async (client) => {
      await client.query('SAVEPOINT before');
      await expect(client.query(`INSERT INTO agent_threads (id, school_id, owner_id) VALUES ($1, NULL, $2)`, [randomUUID(), teacher.id])).rejects.toThrow(
        /row-level security/,
      );
      await client.query('ROLLBACK TO SAVEPOINT before');
      await expect(
        client.query(`INSERT INTO agent_threads (id, school_id, owner_id) VALUES ($1, $2, $3)`, [randomUUID(), schoolA.id, schoolA.personas.schoolAdmin.id]),
      ).rejects.toThrow(/row-level security/);
    });
  });
});

describe('GET /agent/map', () => {
  const names = (tools: { name: string }[]) => tools.map((tool) => tool.name);
  const roverBelt = (mode: 'school' | 'campus') => [
    ...names(toolsForMode(mode).filter((tool) => !tool.roles?.length)),
    'clock',
    'get_agent_map',
    'ask_user',
  ];

  it("lists Rover first, then the specialists the caller's hats make eligible, in order, each with its belt", async () => {
    const both = await call(schoolA.personas.bothHats, 'GET', '/agent/map');
    expect(both).toEqual({
      status: 200,
      body: {
        mode: 'school',
        roster: [
          { speaker: 'rover', name: 'Rover', tools: roverBelt('school') },
          { speaker: 'class_teacher', name: 'Angie', tools: [...names(toolsForRole('class_teacher', 'school')), 'ask_user'] },
          { speaker: 'subject_teacher', name: 'Bean', tools: [...names(toolsForRole('subject_teacher', 'school')), 'ask_user'] },
        ],
      },
    });
    // Campus mode belts, and a director of studies: Sarah is on the roster, after any teaching hats, in registration order.
    const dos = (await call(schoolA.personas.directorOfStudies, 'GET', '/agent/map?mode=campus')).body as AgentMap;
    expect(dos.mode).toBe('campus');
    expect(dos.roster[0]).toEqual({ speaker: 'rover', name: 'Rover', tools: roverBelt('campus') });
    expect(dos.roster.at(-1)).toEqual({ speaker: 'dos', name: 'Sarah', tools: [...names(toolsForRole('dos', 'campus')), 'ask_user'] });
    const speakers = dos.roster.map((entry) => entry.speaker);
    expect(speakers).toEqual(['rover', ...AGENT_TOOL_ROLES.filter((role) => speakers.includes(role))]);
    const admin = await call(schoolA.personas.schoolAdmin, 'GET', '/agent/map');
    expect((admin.body as { roster: { speaker: string }[] }).roster.map((entry) => entry.speaker)).toEqual(['rover']);
    expect((await call(schoolA.personas.schoolAdmin, 'GET', '/agent/map?mode=everywhere')).status).toBe(400);
  });
});
