import { ERROR_SENTENCES, type AgentRunEvent, type ThreadDetail } from '@naalya/agent-tools';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DemoPersona } from '../../seed/demo-seed.js';
import type { TestApp } from '../../../testing/test-app.js';
import { SERVER_CONFIG } from '../../core/config/server-config.js';
import { dispatchTokenBody, signDispatchToken } from '../dispatch/dispatch-token.js';
import {
  agentRequest,
  createAgentTestApp,
  createTestBroker,
  runEvents,
  serveWorkerCalls,
  startRunAndTakeStep,
  storeAsWorker,
  takeStep,
  type TakenStep,
  type TestBroker,
  type TestWorkerCalls,
} from '../fixtures/agent-run-test-kit.js';

/**
 * The worker's usage reports (agent.run.usage over the tools queue) on real PostgreSQL and RabbitMQ: what is counted
 * (run, step, the school's UTC day), for whom (the live lease holder only), the budgets that end a run, the new runs a
 * spent day refuses, and the usage a RUN_FINISHED and the API then report. The step budget here is 1000 tokens.
 */

const STEP_BUDGET = 1_000;

let broker: TestBroker;
let testApp: TestApp;
let worker: TestWorkerCalls;
let schoolA: TestApp['demo']['schools'][0];
let schoolB: TestApp['demo']['schools'][1];
let admin: DemoPersona;

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names, { AGENT_STEP_TOKEN_BUDGET: STEP_BUDGET });
  worker = await serveWorkerCalls(testApp, broker.names);
  [schoolA, schoolB] = testApp.demo.schools;
  admin = schoolA.personas.schoolAdmin;
});
afterAll(async () => {
  await worker?.close();
  await testApp?.close();
  await broker?.close();
});
beforeEach(async () => {
  await testApp.owner.query(`DELETE FROM school_token_days`);
  await testApp.owner.query(`UPDATE schools SET daily_token_budget = NULL`);
  await broker.channel.purgeQueue(broker.names.runsQueue);
});

type RunRow = { status: string; error_code: string | null; lease_worker: string | null; epoch: number; input_tokens: string; output_tokens: string; step_tokens: string };
const runRow = async (runId: string) =>
  ((await testApp.owner.query(`SELECT status, error_code, lease_worker, epoch, input_tokens, output_tokens, step_tokens FROM agent_runs WHERE id = $1`, [runId])) as RunRow[])[0];
/** The school's tokens of today's UTC date. */
const dayOf = async (schoolId: string): Promise<number> => {
  const [row] = (await testApp.owner.query(`SELECT tokens FROM school_token_days WHERE school_id = $1 AND day = (now() AT TIME ZONE 'UTC')::date`, [schoolId])) as {
    tokens: string;
  }[];
  return row ? Number(row.tokens) : 0;
};
const setBudget = (schoolId: string, tokens: number) => testApp.owner.query(`UPDATE schools SET daily_token_budget = $2 WHERE id = $1`, [schoolId, tokens]);
const spendDay = (schoolId: string, tokens: number) =>
  testApp.owner.query(`INSERT INTO school_token_days (school_id, day, tokens) VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2)`, [schoolId, tokens]);
const storedEvents = async (runId: string) =>
  ((await testApp.owner.query(`SELECT payload FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [runId])) as { payload: Record<string, unknown> }[]).map(
    (row) => row.payload,
  );
const call = (persona: DemoPersona, method: 'GET' | 'POST', path: string, body?: unknown) => agentRequest(testApp.app, testApp, persona, method, path, body);
const runOf = async (step: TakenStep) => (await call(admin, 'GET', `/agent/threads/${step.threadId}`)).body as ThreadDetail;

/** A run started by `persona` whose step worker-a has claimed. */
const claimedRun = async (persona: DemoPersona = admin): Promise<TakenStep> => {
  const step = await startRunAndTakeStep(testApp, broker, persona);
  expect((await worker.claim(step.token)).granted).toBe(true);
  return step;
};

describe('usage reports (agent.run.usage)', () => {
  it("counts each report on the run, its step and its school's UTC day, and answers the run's totals", async () => {
    const step = await claimedRun();

    expect(await worker.reportUsage(step.token, { inputTokens: 100, outputTokens: 20 })).toEqual({ proceed: true, run: { inputTokens: 100, outputTokens: 20 } });
    expect(await worker.reportUsage(step.token, { inputTokens: 50, outputTokens: 5 })).toEqual({ proceed: true, run: { inputTokens: 150, outputTokens: 25 } });

    expect(await runRow(step.runId)).toMatchObject({ status: 'running', input_tokens: '150', output_tokens: '25', step_tokens: '175' });
    expect(await dayOf(schoolA.id)).toBe(175);
    expect(await dayOf(schoolB.id)).toBe(0);
  });

  it('the step count starts again at each dispatched step; the run and the day keep theirs', async () => {
    const step = await claimedRun();
    await worker.reportUsage(step.token, { inputTokens: 300, outputTokens: 30 });
    await storeAsWorker(testApp, step, runEvents(step).interrupted([{ interruptId: 'q1', question: 'Which class?' }]));
    expect((await call(admin, 'POST', `/agent/threads/${step.threadId}/resume`, { interruptId: 'q1', answer: 'S1' })).status).toBe(200);
    const resumed = await takeStep(broker);
    expect(resumed.runId).toBe(step.runId);

    expect(await runRow(step.runId)).toMatchObject({ input_tokens: '300', output_tokens: '30', step_tokens: '0' });
    expect((await worker.claim(resumed.token)).granted).toBe(true);
    expect(await worker.reportUsage(resumed.token, { inputTokens: 10, outputTokens: 1 })).toEqual({ proceed: true, run: { inputTokens: 310, outputTokens: 31 } });
    expect(await runRow(step.runId)).toMatchObject({ step_tokens: '11' });
    expect(await dayOf(schoolA.id)).toBe(341);
  });

  it("concurrent reports, of one run and of two runs of a school, are all counted exactly (the day's row is upserted)", async () => {
    const [first, second] = [await claimedRun(), await claimedRun(schoolA.personas.directorOfStudies)];
    const reports = Array.from({ length: 12 }, (_, index) =>
      worker.reportUsage(index % 2 ? first.token : second.token, { inputTokens: 7, outputTokens: 3 }),
    );
    const answers = await Promise.all(reports);

    expect(answers.every((answer) => answer.proceed)).toBe(true);
    expect(await runRow(first.runId)).toMatchObject({ input_tokens: '42', output_tokens: '18' });
    expect(await runRow(second.runId)).toMatchObject({ input_tokens: '42', output_tokens: '18' });
    expect(await dayOf(schoolA.id)).toBe(120);
  });

  it("a platform administrator's run is counted on the run alone: no school's day is charged", async () => {
    const step = await claimedRun(testApp.demo.platformAdmin);
    expect(await worker.reportUsage(step.token, { inputTokens: 40, outputTokens: 4 })).toEqual({ proceed: true, run: { inputTokens: 40, outputTokens: 4 } });
    expect(await testApp.owner.query(`SELECT school_id FROM school_token_days`)).toEqual([]);
  });

  it("counts nothing for a token the server did not sign, an older step's token, another worker, or a run not running", async () => {
    const step = await claimedRun();
    const claims = JSON.parse(Buffer.from(dispatchTokenBody(step.token) ?? '', 'base64url').toString('utf8')) as Parameters<typeof signDispatchToken>[1];
    const forged = signDispatchToken('forger-key-forger-key-forger-key-0000', claims);
    const older = signDispatchToken(testApp.module.get(SERVER_CONFIG).DISPATCH_SIGNING_KEY, { ...claims, epoch: claims.epoch - 1 });
    const usage = { inputTokens: 500, outputTokens: 50 };

    expect(await worker.reportUsage(forged, usage)).toEqual({ proceed: false, reason: 'refused' });
    expect(await worker.reportUsage(older, usage)).toEqual({ proceed: false, reason: 'superseded' });
    expect(await worker.reportUsage(step.token, usage, { workerId: 'worker-b' })).toEqual({ proceed: false, reason: 'superseded' });
    // Another run's step, unclaimed: nobody holds its lease, so nobody's report counts.
    const unclaimed = await startRunAndTakeStep(testApp, broker, schoolA.personas.directorOfStudies);
    expect(await worker.reportUsage(unclaimed.token, usage)).toEqual({ proceed: false, reason: 'superseded' });
    await storeAsWorker(testApp, step, runEvents(step).finished());
    expect(await worker.reportUsage(step.token, usage)).toEqual({ proceed: false, reason: 'ended' });

    expect(await runRow(step.runId)).toMatchObject({ input_tokens: '0', output_tokens: '0', step_tokens: '0' });
    expect(await runRow(unclaimed.runId)).toMatchObject({ input_tokens: '0', output_tokens: '0' });
    expect(await dayOf(schoolA.id)).toBe(0);
  });
});

describe('budgets', () => {
  it("a report that brings the school's day to its budget ends the run with the sentence and takes its lease back", async () => {
    await setBudget(schoolA.id, 500);
    const step = await claimedRun();
    expect((await worker.reportUsage(step.token, { inputTokens: 400, outputTokens: 50 })).proceed).toBe(true);
    const { epoch } = await runRow(step.runId);

    expect(await worker.reportUsage(step.token, { inputTokens: 40, outputTokens: 10 })).toEqual({
      proceed: false,
      reason: 'token_budget_spent',
      run: { inputTokens: 440, outputTokens: 60 },
    });
    expect(await runRow(step.runId)).toMatchObject({ status: 'failed', error_code: 'SCHOOL_TOKEN_BUDGET_SPENT', lease_worker: null, epoch: epoch + 1 });
    expect(await storedEvents(step.runId)).toEqual([
      expect.objectContaining({ type: 'RUN_ERROR', code: 'SCHOOL_TOKEN_BUDGET_SPENT', message: ERROR_SENTENCES.SCHOOL_TOKEN_BUDGET_SPENT }),
    ]);
    // A worker that goes on anyway is refused, and counts nothing more.
    expect((await worker.reportUsage(step.token, { inputTokens: 1, outputTokens: 1 })).proceed).toBe(false);
    expect(await dayOf(schoolA.id)).toBe(500);
  });

  it("a step that goes over AGENT_STEP_TOKEN_BUDGET ends its run with the step's sentence; the school's day is not spent", async () => {
    const step = await claimedRun();
    expect((await worker.reportUsage(step.token, { inputTokens: 900, outputTokens: 100 })).proceed).toBe(true);
    expect(await worker.reportUsage(step.token, { inputTokens: 1, outputTokens: 0 })).toEqual({
      proceed: false,
      reason: 'step_token_budget_spent',
      run: { inputTokens: 901, outputTokens: 100 },
    });
    expect(await runRow(step.runId)).toMatchObject({ status: 'failed', error_code: 'STEP_TOKEN_BUDGET_SPENT', lease_worker: null });
    expect(await storedEvents(step.runId)).toEqual([expect.objectContaining({ type: 'RUN_ERROR', code: 'STEP_TOKEN_BUDGET_SPENT', message: ERROR_SENTENCES.STEP_TOKEN_BUDGET_SPENT })]);
    // The next run of the school goes on.
    expect((await worker.reportUsage((await claimedRun()).token, { inputTokens: 1, outputTokens: 1 })).proceed).toBe(true);
  });

  it('while the day is spent a new message is refused with the sentence and nothing is recorded or queued; another school is not affected', async () => {
    await setBudget(schoolA.id, 100);
    await spendDay(schoolA.id, 100);
    const thread = (await call(admin, 'POST', '/agent/threads', {})).body as { id: string };

    for (const multitaskStrategy of ['reject', 'enqueue'] as const) {
      expect(await call(admin, 'POST', `/agent/threads/${thread.id}/runs`, { message: 'List my classes', multitaskStrategy })).toEqual({
        status: 429,
        body: expect.objectContaining({ code: 'SCHOOL_TOKEN_BUDGET_SPENT', message: ERROR_SENTENCES.SCHOOL_TOKEN_BUDGET_SPENT }),
      });
    }
    expect(await testApp.owner.query(`SELECT id FROM agent_runs WHERE thread_id = $1`, [thread.id])).toEqual([]);
    expect(await broker.runQueueDepth()).toBe(0);

    const other = await startRunAndTakeStep(testApp, broker, schoolB.personas.schoolAdmin);
    expect((await worker.claim(other.token)).granted).toBe(true);
  });

  it('a run dispatched before the day was spent is refused at its claim (token_budget_spent) and fails with the sentence', async () => {
    await setBudget(schoolA.id, 100);
    const step = await startRunAndTakeStep(testApp, broker, admin);
    await spendDay(schoolA.id, 100);

    expect(await worker.claim(step.token)).toEqual({ granted: false, reason: 'token_budget_spent' });
    expect(await runRow(step.runId)).toMatchObject({ status: 'failed', error_code: 'SCHOOL_TOKEN_BUDGET_SPENT', lease_worker: null });
  });

  it('an answer that would resume a run into a model call is refused while the day is spent, and the question still waits', async () => {
    const step = await claimedRun();
    await storeAsWorker(testApp, step, runEvents(step).interrupted([{ interruptId: 'q1', question: 'Which class?' }]));
    await setBudget(schoolA.id, 100);
    await spendDay(schoolA.id, 100);

    expect(await call(admin, 'POST', `/agent/threads/${step.threadId}/resume`, { interruptId: 'q1', answer: 'S1' })).toMatchObject({
      status: 429,
      body: { code: 'SCHOOL_TOKEN_BUDGET_SPENT' },
    });
    const [run] = (await runOf(step)).runs;
    expect(run).toMatchObject({ status: 'interrupted', interrupts: [expect.objectContaining({ interruptId: 'q1', answered: false })] });
    expect(await broker.runQueueDepth()).toBe(0);
  });
});

describe("a run's usage as clients see it", () => {
  it("RUN_FINISHED carries the run's totals as the server counted them, whatever the worker put there", async () => {
    const step = await claimedRun();
    await worker.reportUsage(step.token, { inputTokens: 834, outputTokens: 56 });
    // A worker's own count is not trusted: the server's replaces it.
    const finished: AgentRunEvent = { ...runEvents(step).started(), type: 'RUN_FINISHED', outcome: { type: 'success' }, metadata: { usage: { inputTokens: 1, outputTokens: 1 } } };
    await storeAsWorker(testApp, step, finished);

    expect(await storedEvents(step.runId)).toEqual([
      expect.objectContaining({ type: 'RUN_FINISHED', outcome: { type: 'success' }, metadata: { usage: { inputTokens: 834, outputTokens: 56 } } }),
    ]);
  });

  it('a cancelled run\'s RUN_FINISHED names its committed writes and its usage', async () => {
    const step = await claimedRun();
    await worker.reportUsage(step.token, { inputTokens: 10, outputTokens: 2 });
    expect((await call(admin, 'POST', `/agent/threads/${step.threadId}/runs/${step.runId}/cancel`)).status).toBe(200);

    expect(await storedEvents(step.runId)).toEqual([
      expect.objectContaining({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: [], usage: { inputTokens: 10, outputTokens: 2 } } }),
    ]);
  });

  it("the thread's runs carry each run's usage", async () => {
    const step = await claimedRun();
    await worker.reportUsage(step.token, { inputTokens: 70, outputTokens: 7 });

    expect((await runOf(step)).runs).toEqual([expect.objectContaining({ id: step.runId, usage: { inputTokens: 70, outputTokens: 7 } })]);
  });
});
