import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import {
  AGENT_RUN_LEASE_PATTERN,
  ERROR_SENTENCES,
  agentRunLeaseReplySchema,
  createDepartmentTool,
  listDepartmentsTool,
  listStaffTool,
  type AgentRunEvent,
  type AgentRunLeaseReply,
  type AgentRunRequest,
  type AgentRuntimeContext,
  type AgentToolResult,
  type AnyAgentTool,
  type CancelRunResponse,
  type MultitaskStrategy,
  type ThreadDetail,
} from '@naalya/agent-tools';
import { RmqRpcClient, brokerCredentialsOf, runEventsIngestQueue } from '@naalya/rmq';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { raceOnLockedRow } from '../../../testing/row-race.js';
import type { TestApp } from '../../../testing/test-app.js';
import { DataSource } from 'typeorm';
import { SERVER_CONFIG } from '../../core/config/server-config.js';
import { registerDataSource } from '../../core/tenancy/tenant-context.js';
import { connectToolTransport } from '../../core/transport/tool-transport.js';
import { AgentRunPublisher } from '../dispatch/agent-run-publisher.service.js';
import { dispatchTokenBody, signDispatchToken, type DispatchClaims } from '../dispatch/dispatch-token.js';
import { AgentRunEventStore, type MessageOutcome } from '../events/agent-run-event-store.service.js';
import { STALE_INTERRUPT_ERROR } from '../runs/agent-run-store.service.js';
import { DISPATCH_REFUSED_ERROR } from '../tools/tool-executor.js';
import {
  RMQ_URL,
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
import { RunSweeper } from './run-sweeper.service.js';

/**
 * The run lifecycle end to end on real PostgreSQL and RabbitMQ: the lease a worker claims and renews over the tools
 * queue (through the real transport, as the worker calls it), the sweeper (called directly; its timer is off in tests),
 * cancel, the multitask strategies and direct runs. The worker is played by the test: it takes steps off the runs
 * queue, calls tools and the lease RPC with the step's dispatch token, and publishes run events with it.
 */

/** Short enough to wait out once; most tests move a lease's expiry into the past through the owner's connection instead. */
const LEASE_SECONDS = 2;
const MAX_ATTEMPTS = 3;
const QUEUE_LIMIT = 2;
const DIRECT_RUNS_PER_USER = 3;
const OVERRIDES = {
  AGENT_RUN_LEASE_SECONDS: LEASE_SECONDS,
  AGENT_RUN_MAX_ATTEMPTS: MAX_ATTEMPTS,
  AGENT_RUN_QUEUE_LIMIT: QUEUE_LIMIT,
  AGENT_DIRECT_RUNS_PER_USER: DIRECT_RUNS_PER_USER,
};
const REFUSED = { error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' };

let broker: TestBroker;
let testApp: TestApp;
/** The worker's side of the tools queue: the same RPC client and broker user the worker calls tools and the lease with. */
let tools: RmqRpcClient;
let schoolA: TestApp['demo']['schools'][0];
let schoolB: TestApp['demo']['schools'][1];
const streams: OpenStream[] = [];

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names, OVERRIDES);
  // The tools queue served as main.ts serves it (the transport's check of the publishing broker user included).
  connectToolTransport(testApp.app, testApp.module.get(SERVER_CONFIG));
  await testApp.app.startAllMicroservices();
  tools = new RmqRpcClient({
    url: RMQ_URL,
    exchange: broker.names.toolsExchange,
    routingKey: broker.names.toolsQueue,
    userId: brokerCredentialsOf(RMQ_URL).user,
  });
  await tools.connect(5_000);
  [schoolA, schoolB] = testApp.demo.schools;
});
afterAll(async () => {
  for (const stream of streams) stream.close();
  await tools?.close();
  await testApp?.close();
  await broker?.close();
});
let straysBefore = 0;
beforeEach(async () => {
  straysBefore = testApp.strays().length;
  await broker.channel.purgeQueue(broker.names.runsQueue);
  await broker.channel.purgeQueue(broker.names.deadLetterQueue);
});
afterEach(() => {
  vi.restoreAllMocks();
  // Every unit of work the lifecycle opens (a cancel, a sweep, a start) runs its queries on its own connection: one on
  // another connection sees no tenant and, with the pool taken by waiting requests, waits forever.
  expect(testApp.strays().slice(straysBefore)).toEqual([]);
});

type Ids = { runId: string; threadId: string };
type Run = Ids & { token: string; request: AgentRunRequest };
type RunRow = {
  status: string;
  kind: string;
  epoch: number;
  attempts: number;
  lease_worker: string | null;
  lease_live: boolean;
  error: string | null;
  error_code: string | null;
  pending_interrupts: { interruptId: string; answered: boolean; voided?: boolean }[];
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const waitUntil = async (check: () => Promise<boolean>, timeoutMs = 5_000): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(25);
  }
  return check();
};

const call = (persona: DemoPersona, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) =>
  agentRequest(testApp.app, testApp, persona, method, path, body);
const ownerRows = <T = Record<string, unknown>>(sql: string, parameters: unknown[] = []) => testApp.owner.query(sql, parameters) as Promise<T[]>;

const newThread = async (persona: DemoPersona): Promise<string> => {
  const created = await call(persona, 'POST', '/agent/threads', {});
  expect(created.status).toBe(201);
  return (created.body as { id: string }).id;
};
const startRun = (persona: DemoPersona, threadId: string, body: { message?: string; multitaskStrategy?: MultitaskStrategy } = {}) =>
  call(persona, 'POST', `/agent/threads/${threadId}/runs`, { message: 'List my classes', ...body });
const cancelRun = (persona: DemoPersona, ids: Ids) => call(persona, 'POST', `/agent/threads/${ids.threadId}/runs/${ids.runId}/cancel`);
const resume = (persona: DemoPersona, threadId: string, interruptId: string, answer = 'Yes') =>
  call(persona, 'POST', `/agent/threads/${threadId}/resume`, { interruptId, answer });
const thread = async (persona: DemoPersona, threadId: string) => (await call(persona, 'GET', `/agent/threads/${threadId}`)).body as ThreadDetail;

/** The next step on the runs queue, as the worker takes it: the run it names and the dispatch token it carries. */
const takeStep = async (timeoutMs?: number): Promise<Run> => {
  const { request } = await broker.takeRunRequest(timeoutMs);
  return { ...request.context.run, token: request.context.dispatchToken ?? '', request };
};

/** A thread with a started run whose step the worker has taken. */
const newRun = async (persona: DemoPersona = schoolA.personas.schoolAdmin, message = 'List my classes'): Promise<Run> => {
  const threadId = await newThread(persona);
  const started = await startRun(persona, threadId, { message });
  expect(started).toMatchObject({ status: 201, body: { status: 'running' } });
  const step = await takeStep();
  expect(step.runId).toBe((started.body as { runId: string }).runId);
  return step;
};

/** Every step on the runs queue now (the sweeper also dispatches other tests' runs again: filter by run). */
const drainSteps = async (): Promise<Run[]> => {
  const steps: Run[] = [];
  for (;;) {
    try {
      steps.push(await takeStep(300));
    } catch {
      return steps;
    }
  }
};
const stepsOf = (steps: Run[], runId: string) => steps.filter((step) => step.runId === runId);

const runRow = async (runId: string): Promise<RunRow> =>
  (
    await ownerRows<RunRow>(
      `SELECT status, kind, epoch, attempts, lease_worker, COALESCE(lease_expires_at > now(), false) AS lease_live, error, error_code, pending_interrupts
         FROM agent_runs WHERE id = $1`,
      [runId],
    )
  )[0];
const expireLease = (runId: string) => ownerRows(`UPDATE agent_runs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [runId]);

/** The epoch a dispatch token carries (the worker treats it as opaque; the test reads it). */
const claimsOf = (token: string): DispatchClaims => JSON.parse(Buffer.from(dispatchTokenBody(token) ?? '', 'base64url').toString('utf8')) as DispatchClaims;

/** The lease RPC as the worker calls it: over the tools queue, the step's dispatch token and the worker's id. */
const lease = async (action: 'claim' | 'renew' | 'release', dispatchToken: string, workerId = 'worker-a'): Promise<AgentRunLeaseReply> =>
  agentRunLeaseReplySchema.parse(await tools.call(AGENT_RUN_LEASE_PATTERN, { action, workerId, dispatchToken }, 5_000));

/** A tool call as the worker makes it during a step: the envelope the step's context pins, with the step's dispatch token. */
const callTool = async (persona: DemoPersona, tool: AnyAgentTool, args: unknown, dispatchToken: string, callId = randomUUID()): Promise<AgentToolResult> => {
  const envelope = await dispatchEnvelope(persona, tool, args, { callId });
  return (await tools.call(tool.event, { ...envelope, meta: { ...envelope.meta, dispatchToken } }, 15_000)) as AgentToolResult;
};
const departmentName = () => `Lifecycle ${randomUUID().slice(0, 8)}`;
const departmentsNamed = async (name: string) =>
  (await ownerRows<{ n: number }>(`SELECT count(*)::int AS n FROM departments WHERE name = $1`, [name]))[0].n;

/** The run events of a run (its ids only: a Run carries its step too). */
const eventsOf = (run: Ids) => runEvents({ runId: run.runId, threadId: run.threadId });

const storedEvents = (runId: string) =>
  ownerRows<{ seq: number; type: string; payload: AgentRunEvent; message_id: string }>(
    `SELECT seq, type, payload, message_id FROM agent_run_events WHERE run_id = $1 ORDER BY seq`,
    [runId],
  );
const ask = (ids: Ids, ...interruptIds: string[]) =>
  storeAsWorker(testApp, ids, eventsOf(ids).interrupted(interruptIds.map((interruptId) => ({ interruptId, question: `Question ${interruptId}?` }))));
const deadLetters = async () => (await broker.channel.checkQueue(broker.names.deadLetterQueue)).messageCount;

const open = async (persona: DemoPersona, ids: Ids): Promise<OpenStream> => {
  const stream = await openEventStream(testApp.app, testApp, persona, ids);
  streams.push(stream);
  expect(stream.status).toBe(200);
  return stream;
};

/** What the ingest decided for each worker event it handled from now on (a fenced event leaves no row to look at). */
const watchIngest = () => {
  const store = testApp.module.get(AgentRunEventStore);
  const persist = store.persist.bind(store);
  const outcomes: { runId: string; type: string; outcome: MessageOutcome | { kind: 'unknown-run' } }[] = [];
  vi.spyOn(store, 'persist').mockImplementation(async (runId, messages) => {
    const outcome = await persist(runId, messages);
    messages.forEach((message, index) =>
      outcomes.push({ runId, type: message.events[0].type, outcome: outcome.kind === 'stored' ? outcome.messages[index] : outcome }),
    );
    return outcome;
  });
  return outcomes;
};

/** Backends of the test database waiting for a lock. */
const lockWaiters = async () =>
  (await ownerRows<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n;

describe('the run lease (agent.run.lease over the tools queue)', () => {
  it('a claim by the first worker is granted for the configured lease; a second worker claiming the same step is refused superseded', async () => {
    const run = await newRun();

    expect(await lease('claim', run.token, 'worker-a')).toEqual({ granted: true, leaseMs: LEASE_SECONDS * 1000 });
    expect(await runRow(run.runId)).toMatchObject({ status: 'running', lease_worker: 'worker-a', lease_live: true });
    expect(await lease('claim', run.token, 'worker-b')).toEqual({ granted: false, reason: 'superseded' });
    // A redelivery of the step to the holder itself is still its own.
    expect(await lease('claim', run.token, 'worker-a')).toEqual({ granted: true, leaseMs: LEASE_SECONDS * 1000 });
    expect((await runRow(run.runId)).lease_worker).toBe('worker-a');
  });

  it('the holder renews before expiry and the lease moves on; another worker cannot renew it', async () => {
    const run = await newRun();
    expect((await lease('claim', run.token)).granted).toBe(true);
    const [before] = await ownerRows<{ until: Date }>(`SELECT lease_expires_at AS until FROM agent_runs WHERE id = $1`, [run.runId]);
    await sleep(50);

    expect(await lease('renew', run.token, 'worker-a')).toEqual({ granted: true, leaseMs: LEASE_SECONDS * 1000 });
    const [after] = await ownerRows<{ until: Date }>(`SELECT lease_expires_at AS until FROM agent_runs WHERE id = $1`, [run.runId]);
    expect(after.until.getTime()).toBeGreaterThan(before.until.getTime());
    expect(await lease('renew', run.token, 'worker-b')).toEqual({ granted: false, reason: 'superseded' });
  });

  it('a lease once expired stays gone: renew and claim are refused, and so are the step\'s tool calls', async () => {
    const persona = schoolA.personas.schoolAdmin;
    const run = await newRun(persona);
    expect((await lease('claim', run.token)).granted).toBe(true);
    expect(await callTool(persona, listStaffTool, {}, run.token)).toMatchObject({ data: expect.anything() });

    // Waited out for real, once: no renew came within the lease.
    await sleep(LEASE_SECONDS * 1000 + 300);

    expect(await lease('renew', run.token)).toEqual({ granted: false, reason: 'superseded' });
    expect(await lease('claim', run.token)).toEqual({ granted: false, reason: 'superseded' });
    expect(await lease('claim', run.token, 'worker-b')).toEqual({ granted: false, reason: 'superseded' });
    expect(await callTool(persona, listStaffTool, {}, run.token)).toEqual(REFUSED);
    expect(await runRow(run.runId)).toMatchObject({ status: 'running', lease_live: false });
  });

  it('a step nobody claimed within the lease cannot be claimed late', async () => {
    const run = await newRun();
    await expireLease(run.runId);
    expect(await lease('claim', run.token)).toEqual({ granted: false, reason: 'superseded' });
    expect((await runRow(run.runId)).lease_worker).toBeNull();
  });

  it("refuses a token the server did not sign, a tampered one, an older epoch's, and a malformed request; nothing changes", async () => {
    const run = await newRun();
    const claims = claimsOf(run.token);
    const forged = signDispatchToken('forger-key-forger-key-forger-key-0000', claims);
    const [version, kid, , signature] = run.token.split('.');
    const tampered = `${version}.${kid}.${Buffer.from(JSON.stringify({ ...claims, runId: randomUUID() })).toString('base64url')}.${signature}`;
    const older = signDispatchToken(testApp.module.get(SERVER_CONFIG).DISPATCH_SIGNING_KEY, { ...claims, epoch: claims.epoch - 1 });

    expect(await lease('claim', forged)).toEqual({ granted: false, reason: 'refused' });
    expect(await lease('claim', tampered)).toEqual({ granted: false, reason: 'refused' });
    expect(await lease('claim', 'v1.e30.AAAA')).toEqual({ granted: false, reason: 'refused' });
    expect(agentRunLeaseReplySchema.parse(await tools.call(AGENT_RUN_LEASE_PATTERN, { action: 'steal', workerId: 'x', dispatchToken: run.token }, 5_000))).toEqual({
      granted: false,
      reason: 'refused',
    });
    expect(await lease('claim', older)).toEqual({ granted: false, reason: 'superseded' });
    expect(await runRow(run.runId)).toMatchObject({ status: 'running', lease_worker: null });

    // The real token is still claimable: the refusals took nothing.
    expect((await lease('claim', run.token)).granted).toBe(true);
  });

  it('a cancelled run refuses claim and renew with cancelled: that is how its worker learns to stop', async () => {
    const persona = schoolA.personas.schoolAdmin;
    const holding = await newRun(persona);
    expect((await lease('claim', holding.token)).granted).toBe(true);
    expect((await cancelRun(persona, holding)).status).toBe(200);
    expect(await lease('renew', holding.token)).toEqual({ granted: false, reason: 'cancelled' });

    const unclaimed = await newRun(persona);
    expect((await cancelRun(persona, unclaimed)).status).toBe(200);
    expect(await lease('claim', unclaimed.token)).toEqual({ granted: false, reason: 'cancelled' });
  });

  it('a run that is waiting on a question or has finished refuses its step with ended', async () => {
    const asking = await newRun();
    await ask(asking, 'q');
    expect(await lease('claim', asking.token)).toEqual({ granted: false, reason: 'ended' });

    const done = await newRun();
    await storeAsWorker(testApp, done, eventsOf(done).finished());
    expect(await lease('renew', done.token)).toEqual({ granted: false, reason: 'ended' });
    expect(await lease('release', done.token)).toEqual({ granted: false, reason: 'ended' });
  });
});

describe('the sweeper', () => {
  const sweep = () => testApp.module.get(RunSweeper).sweep();

  it('dispatches an expired step again under a new epoch; the old token\'s calls are refused and its events fenced (acked, not dead-lettered)', async () => {
    const persona = schoolA.personas.schoolAdmin;
    const first = await newRun(persona, 'Create a department');
    expect((await lease('claim', first.token, 'worker-a')).granted).toBe(true);
    const before = await runRow(first.runId);
    expect(before).toMatchObject({ attempts: 1, epoch: claimsOf(first.token).epoch });

    await expireLease(first.runId);
    expect(await sweep()).toBeGreaterThanOrEqual(1);

    const [second, ...more] = stepsOf(await drainSteps(), first.runId);
    expect(more).toEqual([]);
    expect(second.request).toMatchObject({ kind: 'start', message: 'Create a department', context: { run: { runId: first.runId, threadId: first.threadId } } });
    expect(claimsOf(second.token).epoch).toBe(before.epoch + 1);
    expect(await runRow(first.runId)).toMatchObject({ status: 'running', attempts: 2, epoch: before.epoch + 1, lease_worker: null, lease_live: true });

    // The first worker wakes up: its lease, tool calls and events are all refused.
    const name = departmentName();
    expect(await lease('renew', first.token, 'worker-a')).toEqual({ granted: false, reason: 'superseded' });
    expect(await callTool(persona, createDepartmentTool, { name }, first.token)).toEqual(REFUSED);
    expect(await departmentsNamed(name)).toBe(0);
    // The second worker takes the step over.
    expect((await lease('claim', second.token, 'worker-b')).granted).toBe(true);
    expect(await callTool(persona, listStaffTool, {}, second.token)).toMatchObject({ data: expect.anything() });

    const outcomes = watchIngest();
    const events = eventsOf(first);
    await broker.publishEvent(events.text('stale', 'From the worker that lost its lease'), { dispatchToken: first.token });
    // The run's events are handled in order: once the new step's event is stored, the stale one was settled.
    await broker.publishEvent(events.text('fresh', 'From the worker that holds the lease'), { dispatchToken: second.token });
    expect(await waitUntil(async () => (await storedEvents(first.runId)).length >= 1)).toBe(true);
    expect((await storedEvents(first.runId)).map((event) => event.payload)).toEqual([expect.objectContaining({ messageId: 'fresh' })]);
    expect(outcomes.filter((entry) => entry.runId === first.runId).map(({ outcome }) => outcome.kind)).toEqual(['fenced', 'persisted']);
    expect(await deadLetters()).toBe(0);
    expect((await broker.channel.checkQueue(runEventsIngestQueue(broker.names))).messageCount).toBe(0);
  });

  it('leaves alone a step whose worker keeps renewing its lease, and a run waiting on a question that has not expired', async () => {
    const held = await newRun();
    expect((await lease('claim', held.token)).granted).toBe(true);
    const asking = await newRun();
    await ask(asking, 'open');
    const [heldBefore, askingBefore] = [await runRow(held.runId), await runRow(asking.runId)];

    await sweep();
    expect(await lease('renew', held.token)).toMatchObject({ granted: true });
    await sweep();

    const steps = await drainSteps();
    expect([...stepsOf(steps, held.runId), ...stepsOf(steps, asking.runId)]).toEqual([]);
    expect(await runRow(held.runId)).toEqual(heldBefore);
    expect(await runRow(asking.runId)).toEqual(askingBefore);
    expect(await callTool(schoolA.personas.schoolAdmin, listStaffTool, {}, held.token)).toMatchObject({ data: expect.anything() });
  });

  it('starts a queued run whose thread is free, when the prompt start after the previous run ended was lost', async () => {
    const persona = schoolA.personas.teacher;
    const first = await newRun(persona);
    const queued = (await startRun(persona, first.threadId, { message: 'Waiting', multitaskStrategy: 'enqueue' })).body as { runId: string };
    // Stored without the ingest, so nobody is told the run ended: as if the instance that stored it died right after.
    await storeAsWorker(testApp, first, eventsOf(first).finished());
    expect((await runRow(queued.runId)).status).toBe('queued');
    expect(await broker.runQueueDepth()).toBe(0);

    await sweep();

    const [step, ...more] = stepsOf(await drainSteps(), queued.runId);
    expect(more).toEqual([]);
    expect(step.request).toMatchObject({ kind: 'start', message: 'Waiting' });
    expect(await runRow(queued.runId)).toMatchObject({ status: 'running', attempts: 1, epoch: claimsOf(step.token).epoch });
  });

  it('dispatches a resumed step again with the same answers', async () => {
    const persona = schoolA.personas.schoolAdmin;
    const run = await newRun(persona);
    await ask(run, 'which');
    expect((await resume(persona, run.threadId, 'which', 'Sciences')).status).toBe(200);
    const resumed = await takeStep();
    expect(resumed.request).toMatchObject({ kind: 'resume', answers: { which: 'Sciences' } });

    await expireLease(run.runId);
    await sweep();
    const [again] = stepsOf(await drainSteps(), run.runId);
    expect(again.request).toMatchObject({ kind: 'resume', answers: { which: 'Sciences' } });
    expect(claimsOf(again.token).epoch).toBe(claimsOf(resumed.token).epoch + 1);
    expect(await runRow(run.runId)).toMatchObject({ status: 'running', attempts: 2 });
  });

  it(`after ${MAX_ATTEMPTS} attempts the run fails with RUN_ABANDONED, its stream ends with that RUN_ERROR, and the thread takes a new message`, async () => {
    const persona = schoolA.personas.teacher;
    const run = await newRun(persona);
    const tokens = [run.token];
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt += 1) {
      await expireLease(run.runId);
      await sweep();
      const steps = stepsOf(await drainSteps(), run.runId);
      expect(steps).toHaveLength(1);
      tokens.push(steps[0].token);
      expect((await runRow(run.runId)).attempts).toBe(attempt + 1);
    }
    const stream = await open(persona, run);

    await expireLease(run.runId);
    await sweep();

    expect(stepsOf(await drainSteps(), run.runId)).toEqual([]);
    expect(await runRow(run.runId)).toMatchObject({ status: 'failed', error_code: 'RUN_ABANDONED', error: ERROR_SENTENCES.RUN_ABANDONED, attempts: MAX_ATTEMPTS });
    const [event] = await stream.waitFor(1);
    expect(event).toMatchObject({ event: 'RUN_ERROR', data: { type: 'RUN_ERROR', code: 'RUN_ABANDONED', message: ERROR_SENTENCES.RUN_ABANDONED } });
    await stream.ended;
    expect(stream.events).toHaveLength(1);
    expect((await thread(persona, run.threadId)).runs).toEqual([expect.objectContaining({ id: run.runId, status: 'failed', errorCode: 'RUN_ABANDONED' })]);
    // Every token it ever had is refused; the thread is free.
    for (const token of tokens) expect(await lease('claim', token)).toMatchObject({ granted: false });
    const next = await startRun(persona, run.threadId, { message: 'Again please' });
    expect(next).toMatchObject({ status: 201, body: { status: 'running' } });
    expect((await takeStep()).runId).toBe((next.body as { runId: string }).runId);
  });

  it('an abandoned run starts the thread\'s next queued run', async () => {
    const persona = schoolA.personas.teacher;
    const run = await newRun(persona);
    const queued = await startRun(persona, run.threadId, { message: 'Then this', multitaskStrategy: 'enqueue' });
    expect(queued).toMatchObject({ status: 201, body: { status: 'queued' } });
    await ownerRows(`UPDATE agent_runs SET attempts = $2 WHERE id = $1`, [run.runId, MAX_ATTEMPTS]);
    await expireLease(run.runId);

    await sweep();

    expect((await runRow(run.runId)).error_code).toBe('RUN_ABANDONED');
    const queuedId = (queued.body as { runId: string }).runId;
    const [step] = stepsOf(await drainSteps(), queuedId);
    expect(step.request).toMatchObject({ kind: 'start', message: 'Then this' });
    expect(await runRow(queuedId)).toMatchObject({ status: 'running', attempts: 1 });
  });

  it('an interrupted run whose question expired fails with QUESTION_EXPIRED and its question is voided; an answer is then refused as expired', async () => {
    const persona = schoolA.personas.teacher;
    const run = await newRun(persona);
    await ask(run, 'late');
    expect((await thread(persona, run.threadId)).runs[0].interrupts).toEqual([
      expect.objectContaining({ interruptId: 'late', answered: false, expiresAt: expect.any(String) }),
    ]);
    await ownerRows(`UPDATE agent_runs SET expires_at = now() - interval '1 second' WHERE id = $1`, [run.runId]);
    // Expired at once, even before the sweeper has ended the run.
    expect(await resume(persona, run.threadId, 'late')).toMatchObject({ status: 409, body: { code: 'QUESTION_EXPIRED' } });

    await sweep();

    expect(await runRow(run.runId)).toMatchObject({
      status: 'failed',
      error_code: 'QUESTION_EXPIRED',
      error: ERROR_SENTENCES.QUESTION_EXPIRED,
      pending_interrupts: [expect.objectContaining({ interruptId: 'late', answered: false, voided: true })],
    });
    expect((await thread(persona, run.threadId)).runs[0]).toMatchObject({
      status: 'failed',
      errorCode: 'QUESTION_EXPIRED',
      interrupts: [expect.objectContaining({ interruptId: 'late', voided: true, expiresAt: null })],
    });
    expect((await storedEvents(run.runId)).at(-1)?.payload).toMatchObject({ type: 'RUN_ERROR', code: 'QUESTION_EXPIRED' });
    expect(await resume(persona, run.threadId, 'late')).toMatchObject({ status: 409, body: { message: ERROR_SENTENCES.QUESTION_EXPIRED, code: 'QUESTION_EXPIRED' } });
    expect(stepsOf(await drainSteps(), run.runId)).toEqual([]);
    expect((await startRun(persona, run.threadId)).status).toBe(201);
  });

  it('an expired direct run is closed, and its token refused', async () => {
    const persona = schoolA.personas.schoolAdmin;
    const context = (await call(persona, 'POST', '/agent/context', {})).body as AgentRuntimeContext;
    expect(await callTool(persona, listStaffTool, {}, context.dispatchToken ?? '')).toMatchObject({ data: expect.anything() });
    await ownerRows(`UPDATE agent_runs SET expires_at = now() - interval '1 second' WHERE id = $1`, [context.run.runId]);

    await sweep();

    expect(await runRow(context.run.runId)).toMatchObject({ kind: 'direct', status: 'finished' });
    expect(await callTool(persona, listStaffTool, {}, context.dispatchToken ?? '')).toEqual(REFUSED);
    expect((await startRun(persona, context.run.threadId)).status).toBe(201);
    expect(stepsOf(await drainSteps(), context.run.runId)).toEqual([]);
  });

  describe('with a second server instance', () => {
    let peer: INestApplication;
    beforeAll(async () => {
      peer = await createPeerApp(testApp, broker.names, { ingest: false, overrides: OVERRIDES });
      // The peer publishes the steps it dispatches again.
      await peer.get(AgentRunPublisher).start();
    });
    afterAll(async () => {
      await peer?.close();
      // Units of work open frames on the data source registered last (a module-level one, one per process in production): the peer's is gone.
      registerDataSource(testApp.module.get(DataSource));
    });

    it('two instances sweeping at once handle each due run exactly once', async () => {
      const runs: Run[] = [];
      for (const persona of [schoolA.personas.teacher, schoolA.personas.schoolAdmin, schoolB.personas.teacher, schoolB.personas.schoolAdmin]) {
        runs.push(await newRun(persona), await newRun(persona));
      }
      const epochs = new Map<string, number>();
      for (const run of runs) {
        epochs.set(run.runId, (await runRow(run.runId)).epoch);
        await expireLease(run.runId);
      }

      const changed = await Promise.all([sweep(), peer.get(RunSweeper).sweep(), sweep(), peer.get(RunSweeper).sweep()]);

      expect(changed.reduce((sum, n) => sum + n, 0)).toBeGreaterThanOrEqual(runs.length);
      const steps = await drainSteps();
      for (const run of runs) {
        expect(stepsOf(steps, run.runId)).toHaveLength(1);
        expect(await runRow(run.runId)).toMatchObject({ status: 'running', attempts: 2, epoch: (epochs.get(run.runId) ?? 0) + 1 });
      }
    });
  });
});

describe('cancel', () => {
  it('only the owner may cancel: a colleague in the same school, a user of another school and a platform admin get 404, and the run goes on', async () => {
    const owner = schoolA.personas.teacher;
    const run = await newRun(owner);
    expect((await lease('claim', run.token)).granted).toBe(true);

    for (const intruder of [schoolA.personas.schoolAdmin, schoolA.personas.departmentHead, schoolB.personas.teacher, testApp.demo.platformAdmin]) {
      expect(await cancelRun(intruder, run)).toMatchObject({ status: 404, body: { code: 'RUN_NOT_FOUND' } });
    }
    // The owner's run under another of the owner's threads is not found either.
    const otherThread = await newThread(owner);
    expect((await cancelRun(owner, { threadId: otherThread, runId: run.runId })).status).toBe(404);
    expect((await cancelRun(owner, { threadId: run.threadId, runId: 'not-a-run' })).status).toBe(404);

    expect(await runRow(run.runId)).toMatchObject({ status: 'running', epoch: claimsOf(run.token).epoch });
    expect(await lease('renew', run.token)).toMatchObject({ granted: true });
    expect(await storedEvents(run.runId)).toEqual([]);
  });

  it('is idempotent: a second cancel answers cancelled false with the same status, and writes no second event', async () => {
    const owner = schoolA.personas.teacher;
    const run = await newRun(owner);

    const first = await cancelRun(owner, run);
    expect(first).toEqual({ status: 200, body: { runId: run.runId, status: 'cancelled', cancelled: true, committedWrites: [] } });
    const epoch = (await runRow(run.runId)).epoch;
    const second = await cancelRun(owner, run);
    expect(second).toEqual({ status: 200, body: { runId: run.runId, status: 'cancelled', cancelled: false, committedWrites: [] } });
    expect((await runRow(run.runId)).epoch).toBe(epoch);
    expect((await storedEvents(run.runId)).map((event) => event.payload)).toEqual([
      {
        runId: run.runId,
        threadId: run.threadId,
        type: 'RUN_FINISHED',
        outcome: { type: 'cancelled' },
        metadata: { committedWrites: [], usage: { inputTokens: 0, outputTokens: 0 } },
        timestamp: expect.any(Number),
      },
    ]);

    // A run that ended on its own is left as it ended.
    const done = await newRun(owner);
    await storeAsWorker(testApp, done, eventsOf(done).finished());
    expect((await cancelRun(owner, done)).body).toEqual({ runId: done.runId, status: 'finished', cancelled: false, committedWrites: [] });
    expect((await runRow(done.runId)).status).toBe('finished');
  });

  it('of two concurrent cancels of one run exactly one cancels it; the other answers cancelled false, and one RUN_FINISHED is stored', async () => {
    const owner = schoolA.personas.teacher;
    const run = await newRun(owner);
    const answers = await raceOnLockedRow(testApp.owner, { sql: `SELECT id FROM agent_runs WHERE id = $1 FOR NO KEY UPDATE`, parameters: [run.runId] }, () => [
      cancelRun(owner, run),
      cancelRun(owner, run),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers.map((answer) => (answer.body as { cancelled: boolean }).cancelled).sort()).toEqual([false, true]);
    expect((await storedEvents(run.runId)).map((event) => (event.payload as { type: string }).type)).toEqual(['RUN_FINISHED']);
  });

  it('cancelling a run waiting on a question voids it (a resume is then 409 STALE_INTERRUPT) and ends its stream with RUN_FINISHED cancelled', async () => {
    const owner = schoolA.personas.teacher;
    const run = await newRun(owner);
    await storeAsWorker(testApp, run, eventsOf(run).started());
    await ask(run, 'colour');

    expect((await cancelRun(owner, run)).body).toMatchObject({ status: 'cancelled', cancelled: true });

    const stream = await open(owner, run);
    await stream.ended;
    expect(stream.events.map((event) => [event.event, (event.data['outcome'] as { type: string } | undefined)?.type])).toEqual([
      ['RUN_STARTED', undefined],
      ['RUN_FINISHED', 'interrupt'],
      ['RUN_FINISHED', 'cancelled'],
    ]);
    expect(stream.events[2].data).toMatchObject({ metadata: { committedWrites: [] } });
    expect(await resume(owner, run.threadId, 'colour')).toMatchObject({ status: 409, body: { message: STALE_INTERRUPT_ERROR, code: 'STALE_INTERRUPT' } });
    expect((await thread(owner, run.threadId)).runs[0]).toMatchObject({
      status: 'cancelled',
      interrupts: [expect.objectContaining({ interruptId: 'colour', answered: false, voided: true, expiresAt: null })],
    });
    expect(await broker.runQueueDepth()).toBe(0);
    expect((await startRun(owner, run.threadId)).status).toBe(201);
  });

  it("a running run's stream ends with RUN_FINISHED cancelled", async () => {
    const owner = schoolA.personas.teacher;
    const run = await newRun(owner);
    const stream = await open(owner, run);
    await broker.publishEvent(eventsOf(run).started());
    await stream.waitFor(1);

    expect((await cancelRun(owner, run)).status).toBe(200);

    const events = await stream.waitFor(2);
    expect(events.map((event) => event.event)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
    expect(events[1].data).toMatchObject({ outcome: { type: 'cancelled' } });
    await stream.ended;
  });

  it("after a cancel the run's token is refused by execute() and a late worker event is fenced: acked, never stored, not dead-lettered", async () => {
    const owner = schoolA.personas.schoolAdmin;
    const run = await newRun(owner);
    expect((await lease('claim', run.token)).granted).toBe(true);
    expect(await callTool(owner, listStaffTool, {}, run.token)).toMatchObject({ data: expect.anything() });

    expect((await cancelRun(owner, run)).status).toBe(200);

    const name = departmentName();
    expect(await callTool(owner, createDepartmentTool, { name }, run.token)).toEqual(REFUSED);
    expect(await callTool(owner, listStaffTool, {}, run.token)).toEqual(REFUSED);
    expect(await departmentsNamed(name)).toBe(0);
    const outcomes = watchIngest();
    await broker.publishEvent(eventsOf(run).text('late', 'Still talking'));
    await broker.publishEvent(eventsOf(run).finished());
    expect(await waitUntil(async () => outcomes.filter((entry) => entry.runId === run.runId).length >= 2)).toBe(true);
    expect(outcomes.filter((entry) => entry.runId === run.runId).map(({ outcome }) => outcome)).toEqual([
      expect.objectContaining({ kind: 'fenced', status: 'cancelled' }),
      expect.objectContaining({ kind: 'fenced', status: 'cancelled' }),
    ]);
    expect((await storedEvents(run.runId)).map((event) => event.type)).toEqual(['RUN_FINISHED']);
    expect((await runRow(run.runId)).status).toBe('cancelled');
    await sleep(200);
    expect(await deadLetters()).toBe(0);
    expect((await broker.channel.checkQueue(runEventsIngestQueue(broker.names))).messageCount).toBe(0);
  });

  it('committedWrites lists the writes the run committed before the cancel, with their audit ids; they stay', async () => {
    const owner = schoolA.personas.schoolAdmin;
    const run = await newRun(owner);
    expect((await lease('claim', run.token)).granted).toBe(true);
    const name = departmentName();
    const callId = randomUUID();
    const written = await callTool(owner, createDepartmentTool, { name }, run.token, callId);
    expect(written).toMatchObject({ data: { name }, auditId: expect.any(String) });
    // A refused write is no committed write.
    expect(await callTool(owner, createDepartmentTool, { name }, run.token)).toHaveProperty('error');

    const cancelled = await cancelRun(owner, run);

    const committedWrites = [{ callId, event: createDepartmentTool.event, auditId: (written as { auditId: string }).auditId }];
    expect(cancelled.body).toEqual({ runId: run.runId, status: 'cancelled', cancelled: true, committedWrites });
    expect((await storedEvents(run.runId)).at(-1)?.payload).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites } });
    expect(await departmentsNamed(name)).toBe(1);
    // Asked again, the answer still names them.
    expect((await cancelRun(owner, run)).body).toMatchObject({ cancelled: false, committedWrites });
  });

  it('a cancel during a write held inside its transaction answers only after the write committed and lists it; a call after the cancel commits nothing', async () => {
    const owner = schoolA.personas.schoolAdmin;
    const run = await newRun(owner);
    expect((await lease('claim', run.token)).granted).toBe(true);
    const name = departmentName();
    // Another transaction holds the department's name (the unique index): the write waits inside its transaction.
    const blocker = testApp.owner.createQueryRunner();
    await blocker.connect();
    await blocker.startTransaction();
    try {
      await blocker.query(`INSERT INTO departments (school_id, name) VALUES ($1, $2)`, [schoolA.id, name]);
      const callId = randomUUID();
      const write = callTool(owner, createDepartmentTool, { name }, run.token, callId);
      expect(await waitUntil(async () => (await lockWaiters()) >= 1)).toBe(true);

      let answered = false;
      const cancel = cancelRun(owner, run).then((response) => ((answered = true), response));
      // The cancel waits for the write's share lock on the run's row.
      expect(await waitUntil(async () => (await lockWaiters()) >= 2)).toBe(true);
      await sleep(200);
      expect(answered).toBe(false);
      expect((await runRow(run.runId)).status).toBe('running');

      await blocker.rollbackTransaction();
      const [written, cancelled] = await Promise.all([write, cancel]);

      expect(written).toMatchObject({ data: { name }, auditId: expect.any(String) });
      expect(cancelled).toEqual({
        status: 200,
        body: {
          runId: run.runId,
          status: 'cancelled',
          cancelled: true,
          committedWrites: [{ callId, event: createDepartmentTool.event, auditId: (written as { auditId: string }).auditId }],
        },
      });
      expect(await departmentsNamed(name)).toBe(1);

      const after = departmentName();
      expect(await callTool(owner, createDepartmentTool, { name: after }, run.token)).toEqual(REFUSED);
      expect(await departmentsNamed(after)).toBe(0);
      expect((await cancelRun(owner, run)).body).toMatchObject({ cancelled: false, committedWrites: [expect.objectContaining({ callId })] });
    } finally {
      if (blocker.isTransactionActive) await blocker.rollbackTransaction();
      await blocker.release();
    }
  });

  it('a cancel does not wait for a read held inside its transaction (a read commits nothing, so it takes no lock on the run); a read after the cancel is refused', async () => {
    const owner = schoolA.personas.schoolAdmin;
    const run = await newRun(owner);
    expect((await lease('claim', run.token)).granted).toBe(true);
    // Another transaction holds the departments table: the read waits inside its transaction, after its run check.
    const blocker = testApp.owner.createQueryRunner();
    await blocker.connect();
    await blocker.startTransaction();
    try {
      await blocker.query('LOCK TABLE departments IN ACCESS EXCLUSIVE MODE');
      const read = callTool(owner, listDepartmentsTool, {}, run.token);
      expect(await waitUntil(async () => (await lockWaiters()) >= 1)).toBe(true);

      const cancelled = await Promise.race([cancelRun(owner, run), sleep(5_000).then(() => 'the cancel waited for the read')]);
      expect(cancelled).toEqual({ status: 200, body: { runId: run.runId, status: 'cancelled', cancelled: true, committedWrites: [] } });

      await blocker.rollbackTransaction();
      // Checked before the cancel, the read answers; nothing it did needed the cancel to wait.
      expect(await read).toMatchObject({ data: expect.any(Array) });
      expect(await callTool(owner, listDepartmentsTool, {}, run.token)).toEqual(REFUSED);
    } finally {
      if (blocker.isTransactionActive) await blocker.rollbackTransaction();
      await blocker.release();
    }
  });

  it('tool calls racing a cancel each either committed before it (and are listed) or are refused and write nothing', async () => {
    const owner = schoolA.personas.schoolAdmin;
    const run = await newRun(owner);
    expect((await lease('claim', run.token)).granted).toBe(true);
    const names = Array.from({ length: 6 }, departmentName);
    // Calls and the cancel race; each call either committed (and is listed) or wrote nothing.
    const [cancelled, ...results] = await Promise.all([cancelRun(owner, run), ...names.map((name) => callTool(owner, createDepartmentTool, { name }, run.token))]);
    const listed = new Set(((cancelled.body as CancelRunResponse).committedWrites ?? []).map((write) => write.auditId));
    for (const [index, result] of results.entries()) {
      const count = await departmentsNamed(names[index]);
      if ('data' in result) {
        expect(count).toBe(1);
        expect(listed.has(result.auditId ?? '')).toBe(true);
      } else {
        expect(result).toEqual(REFUSED);
        expect(count).toBe(0);
      }
    }
    expect(listed.size).toBe(results.filter((result) => 'data' in result).length);
  });
});

describe('double-texting (multitaskStrategy)', () => {
  it('reject is the default: a second message on a busy thread is 409 RUN_IN_PROGRESS and nothing is recorded', async () => {
    const persona = schoolA.personas.teacher;
    const run = await newRun(persona);
    expect(await startRun(persona, run.threadId)).toMatchObject({ status: 409, body: { message: ERROR_SENTENCES.RUN_IN_PROGRESS, code: 'RUN_IN_PROGRESS' } });
    expect(await startRun(persona, run.threadId, { multitaskStrategy: 'reject' })).toMatchObject({ status: 409, body: { code: 'RUN_IN_PROGRESS' } });
    expect(await call(persona, 'POST', `/agent/threads/${run.threadId}/runs`, { message: 'x', multitaskStrategy: 'rollback' })).toMatchObject({ status: 400 });
    expect(await ownerRows(`SELECT status FROM agent_runs WHERE thread_id = $1`, [run.threadId])).toEqual([{ status: 'running' }]);
    expect(await broker.runQueueDepth()).toBe(0);
  });

  it('enqueue answers queued, and the queued runs start in order, each when the run before it ends', async () => {
    const persona = schoolA.personas.teacher;
    const first = await newRun(persona, 'First');
    const second = await startRun(persona, first.threadId, { message: 'Second', multitaskStrategy: 'enqueue' });
    const third = await startRun(persona, first.threadId, { message: 'Third', multitaskStrategy: 'enqueue' });
    expect(second).toMatchObject({ status: 201, body: { status: 'queued' } });
    expect(third).toMatchObject({ status: 201, body: { status: 'queued' } });
    const [secondId, thirdId] = [second, third].map((response) => (response.body as { runId: string }).runId);
    expect(await broker.runQueueDepth()).toBe(0);
    expect((await thread(persona, first.threadId)).runs.map((run) => [run.message, run.status])).toEqual([
      ['First', 'running'],
      ['Second', 'queued'],
      ['Third', 'queued'],
    ]);
    // A queued run has no step yet, so no token; a sweep does not start it while the thread is busy.
    await testApp.module.get(RunSweeper).sweep();
    expect(stepsOf(await drainSteps(), secondId)).toEqual([]);

    // The worker ends the first run: the oldest queued one starts.
    await broker.publishEvent(eventsOf(first).finished());
    const secondStep = await takeStep(5_000);
    expect(secondStep).toMatchObject({ runId: secondId, threadId: first.threadId, request: { kind: 'start', message: 'Second' } });
    expect((await runRow(secondId)).status).toBe('running');
    expect((await runRow(thirdId)).status).toBe('queued');

    // It fails on the worker: the next starts all the same.
    await broker.publishEvent(eventsOf(secondStep).failed('The model gave up.'));
    const thirdStep = await takeStep(5_000);
    expect(thirdStep).toMatchObject({ runId: thirdId, request: { kind: 'start', message: 'Third' } });
    expect(await broker.runQueueDepth()).toBe(0);
    expect((await thread(persona, first.threadId)).runs.map((run) => run.status)).toEqual(['finished', 'failed', 'running']);
  });

  it('a queued run that is cancelled never starts; a cancel of the active run starts the next queued one', async () => {
    const persona = schoolA.personas.teacher;
    const first = await newRun(persona, 'First');
    const second = (await startRun(persona, first.threadId, { message: 'Second', multitaskStrategy: 'enqueue' })).body as { runId: string };
    const third = (await startRun(persona, first.threadId, { message: 'Third', multitaskStrategy: 'enqueue' })).body as { runId: string };

    expect((await cancelRun(persona, { threadId: first.threadId, runId: second.runId })).body).toMatchObject({ status: 'cancelled', cancelled: true });
    expect(await broker.runQueueDepth()).toBe(0);
    expect((await cancelRun(persona, first)).body).toMatchObject({ status: 'cancelled', cancelled: true });

    expect(await takeStep()).toMatchObject({ runId: third.runId, request: { message: 'Third' } });
    expect((await thread(persona, first.threadId)).runs.map((run) => run.status)).toEqual(['cancelled', 'cancelled', 'running']);
  });

  it(`the queue is bounded: past ${QUEUE_LIMIT} waiting runs, enqueue answers 429 RUN_QUEUE_FULL`, async () => {
    const persona = schoolA.personas.teacher;
    const run = await newRun(persona);
    for (let index = 0; index < QUEUE_LIMIT; index += 1) {
      expect((await startRun(persona, run.threadId, { multitaskStrategy: 'enqueue' })).body).toMatchObject({ status: 'queued' });
    }
    expect(await startRun(persona, run.threadId, { multitaskStrategy: 'enqueue' })).toMatchObject({
      status: 429,
      body: { message: ERROR_SENTENCES.RUN_QUEUE_FULL, code: 'RUN_QUEUE_FULL' },
    });
    expect(await ownerRows(`SELECT count(*)::int AS n FROM agent_runs WHERE thread_id = $1 AND status = 'queued'`, [run.threadId])).toEqual([{ n: QUEUE_LIMIT }]);
  });

  it('a pending question blocks enqueue (409 QUESTION_PENDING) and reject (409 RUN_IN_PROGRESS)', async () => {
    const persona = schoolA.personas.teacher;
    const run = await newRun(persona);
    await ask(run, 'pending');
    expect(await startRun(persona, run.threadId, { multitaskStrategy: 'enqueue' })).toMatchObject({
      status: 409,
      body: { message: ERROR_SENTENCES.QUESTION_PENDING, code: 'QUESTION_PENDING' },
    });
    expect(await startRun(persona, run.threadId)).toMatchObject({ status: 409, body: { code: 'RUN_IN_PROGRESS' } });
    expect(await ownerRows(`SELECT status FROM agent_runs WHERE thread_id = $1`, [run.threadId])).toEqual([{ status: 'interrupted' }]);
  });

  it('interrupt cancels the active run (its stream ends cancelled, its token refused) and starts the new one at once', async () => {
    const persona = schoolA.personas.schoolAdmin;
    const first = await newRun(persona, 'First');
    expect((await lease('claim', first.token)).granted).toBe(true);
    const stream = await open(persona, first);

    const second = await startRun(persona, first.threadId, { message: 'Instead', multitaskStrategy: 'interrupt' });

    expect(second).toMatchObject({ status: 201, body: { status: 'running' } });
    const step = await takeStep();
    expect(step).toMatchObject({ runId: (second.body as { runId: string }).runId, request: { kind: 'start', message: 'Instead' } });
    expect((await runRow(first.runId)).status).toBe('cancelled');
    const [event] = await stream.waitFor(1);
    expect(event).toMatchObject({ event: 'RUN_FINISHED', data: { outcome: { type: 'cancelled' } } });
    await stream.ended;
    expect(await lease('renew', first.token)).toEqual({ granted: false, reason: 'cancelled' });
    expect(await callTool(persona, listStaffTool, {}, first.token)).toEqual(REFUSED);
    expect((await lease('claim', step.token)).granted).toBe(true);
    expect(await callTool(persona, listStaffTool, {}, step.token)).toMatchObject({ data: expect.anything() });
  });

  it('interrupt also stops a run waiting on a question: the question is voided', async () => {
    const persona = schoolA.personas.teacher;
    const first = await newRun(persona);
    await ask(first, 'wait');
    const second = await startRun(persona, first.threadId, { message: 'Never mind', multitaskStrategy: 'interrupt' });
    expect(second).toMatchObject({ status: 201, body: { status: 'running' } });
    expect(await runRow(first.runId)).toMatchObject({ status: 'cancelled', pending_interrupts: [expect.objectContaining({ interruptId: 'wait', voided: true })] });
    expect(await resume(persona, first.threadId, 'wait')).toMatchObject({ status: 409, body: { code: 'STALE_INTERRUPT' } });
    expect((await takeStep()).runId).toBe((second.body as { runId: string }).runId);
  });

  it.each(['reject', 'enqueue', 'interrupt'] as const)('concurrent starts under %s never leave two active runs in a thread', async (strategy) => {
    const persona = schoolA.personas.teacher;
    const threadId = await newThread(persona);
    const answers = await Promise.all(Array.from({ length: 6 }, (_, index) => startRun(persona, threadId, { message: `Message ${index}`, multitaskStrategy: strategy })));
    const rows = await ownerRows<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM agent_runs WHERE thread_id = $1 GROUP BY status ORDER BY status`, [
      threadId,
    ]);
    const statuses = answers.map((answer) => answer.status).sort();
    const steps = await drainSteps();
    const running = await ownerRows<{ id: string }>(`SELECT id FROM agent_runs WHERE thread_id = $1 AND status IN ('running', 'interrupted')`, [threadId]);
    expect(running).toHaveLength(1);
    if (strategy === 'reject') {
      expect(statuses).toEqual([201, 409, 409, 409, 409, 409]);
      expect(rows).toEqual([{ status: 'running', n: 1 }]);
    } else if (strategy === 'enqueue') {
      expect(statuses).toEqual([201, 201, 201, 429, 429, 429]);
      expect(rows).toEqual([
        { status: 'queued', n: QUEUE_LIMIT },
        { status: 'running', n: 1 },
      ]);
    } else {
      expect(statuses).toEqual([201, 201, 201, 201, 201, 201]);
      expect(rows).toEqual([
        { status: 'cancelled', n: 5 },
        { status: 'running', n: 1 },
      ]);
    }
    // Only the active run's latest step may still act.
    const grants: { runId: string; granted: boolean }[] = [];
    for (const step of steps.filter((candidate) => candidate.threadId === threadId)) {
      grants.push({ runId: step.runId, granted: (await lease('claim', step.token)).granted });
    }
    expect(grants.filter((grant) => grant.granted)).toEqual([{ runId: running[0].id, granted: true }]);
  });

  it('concurrent starts mixing every strategy never leave two active runs in a thread, and never fail', async () => {
    const persona = schoolA.personas.teacher;
    const threadId = await newThread(persona);
    const strategies: MultitaskStrategy[] = ['reject', 'enqueue', 'interrupt', 'reject', 'enqueue', 'interrupt', 'interrupt', 'enqueue', 'reject'];
    const answers = await Promise.all(strategies.map((multitaskStrategy, index) => startRun(persona, threadId, { message: `Message ${index}`, multitaskStrategy })));
    for (const answer of answers) expect([201, 409, 429]).toContain(answer.status);
    expect(await ownerRows(`SELECT count(*)::int AS n FROM agent_runs WHERE thread_id = $1 AND status IN ('running', 'interrupted')`, [threadId])).toEqual([{ n: 1 }]);
    expect((await ownerRows<{ n: number }>(`SELECT count(*)::int AS n FROM agent_runs WHERE thread_id = $1 AND status = 'queued'`, [threadId]))[0].n).toBeLessThanOrEqual(
      QUEUE_LIMIT,
    );
  });
});

describe('direct runs (POST /agent/context)', () => {
  const openDirect = (persona: DemoPersona) => call(persona, 'POST', '/agent/context', {});
  const closeDirect = (persona: DemoPersona, runId: string) => call(persona, 'DELETE', `/agent/context/${runId}`);
  const openDirectRuns = async (persona: DemoPersona) =>
    (
      await ownerRows<{ n: number }>(`SELECT count(*)::int AS n FROM agent_runs WHERE owner_id = $1 AND kind = 'direct' AND status = 'running' AND expires_at > now()`, [
        persona.id,
      ])
    )[0].n;

  it("opens a direct run whose token works for a tool call; DELETE closes it (204), then its token is refused; another user's DELETE is 404", async () => {
    const persona = schoolA.personas.campusAdmin;
    const opened = await openDirect(persona);
    expect(opened.status).toBe(200);
    const context = opened.body as AgentRuntimeContext;
    const token = context.dispatchToken ?? '';
    expect(await runRow(context.run.runId)).toMatchObject({ kind: 'direct', status: 'running', lease_worker: null });
    expect(await callTool(persona, listStaffTool, {}, token)).toMatchObject({ data: expect.anything() });
    // No worker, no lease: there is nothing to claim.
    expect((await lease('claim', token)).granted).toBe(false);

    for (const intruder of [schoolA.personas.schoolAdmin, schoolB.personas.campusAdmin, testApp.demo.platformAdmin]) {
      expect(await closeDirect(intruder, context.run.runId)).toMatchObject({ status: 404, body: { code: 'RUN_NOT_FOUND' } });
    }
    expect(await callTool(persona, listStaffTool, {}, token)).toMatchObject({ data: expect.anything() });
    // An agent run of the caller's is not a direct run.
    const agentRun = await newRun(persona);
    expect((await closeDirect(persona, agentRun.runId)).status).toBe(404);
    expect((await runRow(agentRun.runId)).status).toBe('running');

    // The direct run holds its thread like any active run.
    expect((await startRun(persona, context.run.threadId)).status).toBe(409);

    expect(await closeDirect(persona, context.run.runId)).toMatchObject({ status: 204 });
    expect(await runRow(context.run.runId)).toMatchObject({ kind: 'direct', status: 'finished' });
    expect(await callTool(persona, listStaffTool, {}, token)).toEqual(REFUSED);
    expect(await closeDirect(persona, context.run.runId)).toMatchObject({ status: 204 });
    expect((await runRow(context.run.runId)).status).toBe('finished');
    // Its thread is free again.
    expect((await startRun(persona, context.run.threadId)).body).toMatchObject({ status: 'running' });
    expect((await closeDirect(persona, 'not-a-run')).status).toBe(404);
    expect((await storedEvents(context.run.runId)).map((event) => event.payload)).toEqual([expect.objectContaining({ type: 'RUN_FINISHED', outcome: { type: 'success' } })]);
  });

  it(`a user has at most ${DIRECT_RUNS_PER_USER} open: the next answers 429 DIRECT_RUN_LIMIT, and closing one frees a slot`, async () => {
    const persona = schoolB.personas.registrar;
    const opened: string[] = [];
    // The test kit's standing run for each persona is a direct run too, and counts.
    while ((await openDirectRuns(persona)) < DIRECT_RUNS_PER_USER) {
      const response = await openDirect(persona);
      expect(response.status).toBe(200);
      opened.push((response.body as AgentRuntimeContext).run.runId);
    }
    expect(opened.length).toBeGreaterThan(0);

    expect(await openDirect(persona)).toMatchObject({ status: 429, body: { message: ERROR_SENTENCES.DIRECT_RUN_LIMIT, code: 'DIRECT_RUN_LIMIT' } });
    // Another user is not bound by this one's sessions.
    expect((await openDirect(schoolB.personas.teacher)).status).toBe(200);

    expect((await closeDirect(persona, opened[0])).status).toBe(204);
    expect((await openDirect(persona)).status).toBe(200);
    expect((await openDirect(persona)).status).toBe(429);
  });

  it(`concurrent opens never pass ${DIRECT_RUNS_PER_USER} open direct runs`, async () => {
    const persona = schoolB.personas.teacher;
    const before = await openDirectRuns(persona);
    const answers = await Promise.all(Array.from({ length: DIRECT_RUNS_PER_USER + 3 }, () => openDirect(persona)));
    expect(answers.filter((answer) => answer.status === 200)).toHaveLength(Math.max(0, DIRECT_RUNS_PER_USER - before));
    expect(answers.filter((answer) => answer.status !== 200).map((answer) => answer.status)).toEqual(answers.filter((answer) => answer.status !== 200).map(() => 429));
    expect(await openDirectRuns(persona)).toBe(DIRECT_RUNS_PER_USER);
  });

  it('of two concurrent closes of one direct run both answer 204 and one RUN_FINISHED is stored', async () => {
    const persona = schoolA.personas.departmentHead;
    const { runId } = ((await openDirect(persona)).body as AgentRuntimeContext).run;
    const answers = await raceOnLockedRow(testApp.owner, { sql: `SELECT id FROM agent_runs WHERE id = $1 FOR NO KEY UPDATE`, parameters: [runId] }, () => [
      closeDirect(persona, runId),
      closeDirect(persona, runId),
    ]);
    expect(answers.map((answer) => answer.status)).toEqual([204, 204]);
    expect((await storedEvents(runId)).map((event) => (event.payload as { type: string }).type)).toEqual(['RUN_FINISHED']);
  });
});
