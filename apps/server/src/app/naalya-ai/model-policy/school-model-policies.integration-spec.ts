import { ERROR_SENTENCES, type AgentModelIdentity, type SchoolModelPolicy } from '@naalya/agent-tools';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TARGET_SCHOOL_HEADER } from '../../core/http/target-school.js';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { tokenFor } from '../../../testing/rest-client.js';
import type { TestApp } from '../../../testing/test-app.js';
import {
  agentRequest,
  createAgentTestApp,
  createTestBroker,
  serveWorkerCalls,
  startRunAndTakeStep,
  takeStep,
  type TestBroker,
  type TestWorkerCalls,
} from '../fixtures/agent-run-test-kit.js';

/**
 * Each school's data choice, on real PostgreSQL and RabbitMQ: a platform administrator reads and sets it over REST
 * (audited, refused to anyone else), and the lease claim enforces it before a worker may send anything to a model. The
 * platform default here allows OpenAI's models only.
 */

const PLATFORM_DEFAULT = 'openai';
const OPENAI: AgentModelIdentity = { model: 'openai:gpt-4.1', selfHosted: false };
const CLAUDE: AgentModelIdentity = { model: 'anthropic:claude-sonnet-4-5', selfHosted: false };

let broker: TestBroker;
let testApp: TestApp;
let worker: TestWorkerCalls;
let schoolA: TestApp['demo']['schools'][0];
let schoolB: TestApp['demo']['schools'][1];
let platformAdmin: DemoPersona;

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names, { AGENT_MODELS_ALLOWED: [PLATFORM_DEFAULT] });
  worker = await serveWorkerCalls(testApp, broker.names);
  [schoolA, schoolB] = testApp.demo.schools;
  platformAdmin = testApp.demo.platformAdmin;
});
afterAll(async () => {
  await worker?.close();
  await testApp?.close();
  await broker?.close();
});
beforeEach(async () => {
  await testApp.owner.query(`UPDATE schools SET allowed_models = NULL, daily_token_budget = NULL`);
  await broker.channel.purgeQueue(broker.names.runsQueue);
});

const policyPath = (schoolId: string) => `/platform/schools/${schoolId}/model-policy`;

const rest = async (persona: DemoPersona, method: 'GET' | 'PUT', path: string, body?: unknown, targetSchoolId?: string) => {
  const headers: Record<string, string> = { authorization: `Bearer ${tokenFor(testApp, persona)}`, 'content-type': 'application/json' };
  if (targetSchoolId) headers[TARGET_SCHOOL_HEADER] = targetSchoolId;
  const response = await fetch(`${await testApp.app.getUrl()}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};
const setChoice = (schoolId: string, allowedModels: string[] | null) =>
  testApp.owner.query(`UPDATE schools SET allowed_models = $2 WHERE id = $1`, [schoolId, allowedModels]);
const auditRows = (schoolId: string) =>
  testApp.owner.query(`SELECT actor_id, action, resource_type, resource_id, source FROM audit_log WHERE school_id = $1 AND resource_type = 'model_policy'`, [
    schoolId,
  ]) as Promise<Record<string, unknown>[]>;
const stored = async (schoolId: string) =>
  ((await testApp.owner.query(`SELECT allowed_models, daily_token_budget FROM schools WHERE id = $1`, [schoolId])) as Record<string, unknown>[])[0];
const runRow = async (runId: string) =>
  (
    (await testApp.owner.query(`SELECT status, error, error_code, lease_worker FROM agent_runs WHERE id = $1`, [runId])) as {
      status: string;
      error: string | null;
      error_code: string | null;
      lease_worker: string | null;
    }[]
  )[0];
const storedEvents = async (runId: string) =>
  ((await testApp.owner.query(`SELECT payload FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [runId])) as { payload: Record<string, unknown> }[]).map(
    (row) => row.payload,
  );

/** A run of `persona`'s whose step a worker running `model` claims; the claim's answer and the run's row after it. */
const claimAs = async (persona: DemoPersona, model: AgentModelIdentity | undefined) => {
  const step = await startRunAndTakeStep(testApp, broker, persona);
  const answer = await worker.claim(step.token, { model });
  return { step, answer, run: await runRow(step.runId) };
};

describe('GET and PUT /platform/schools/:schoolId/model-policy', () => {
  it('a platform administrator reads a school with no choice of its own as following the platform default', async () => {
    const read = await rest(platformAdmin, 'GET', policyPath(schoolA.id));
    expect(read).toEqual({
      status: 200,
      body: { schoolId: schoolA.id, allowedModels: null, dailyTokenBudget: null, effective: { allowedModels: [PLATFORM_DEFAULT], dailyTokenBudget: null }, tokensToday: 0 },
    });
  });

  it('a platform administrator sets a school\'s choice in the school chosen for the session, with exactly one audit row there', async () => {
    const body = { allowedModels: ['Anthropic:claude-sonnet-4-5', 'ollama'], dailyTokenBudget: 50_000 };
    const written = await rest(platformAdmin, 'PUT', policyPath(schoolA.id), body, schoolA.id);

    const expected: SchoolModelPolicy = {
      schoolId: schoolA.id,
      allowedModels: ['anthropic:claude-sonnet-4-5', 'ollama'],
      dailyTokenBudget: 50_000,
      effective: { allowedModels: ['anthropic:claude-sonnet-4-5', 'ollama'], dailyTokenBudget: 50_000 },
      tokensToday: 0,
    };
    expect(written).toEqual({ status: 200, body: expected });
    expect((await rest(platformAdmin, 'GET', policyPath(schoolA.id))).body).toEqual(expected);
    expect(await auditRows(schoolA.id)).toEqual([{ actor_id: platformAdmin.id, action: 'update', resource_type: 'model_policy', resource_id: schoolA.id, source: 'http' }]);
    expect(await stored(schoolB.id)).toEqual({ allowed_models: null, daily_token_budget: null });

    // Back to the platform default: null for both.
    expect((await rest(platformAdmin, 'PUT', policyPath(schoolA.id), { allowedModels: null, dailyTokenBudget: null }, schoolA.id)).status).toBe(200);
    expect(await stored(schoolA.id)).toEqual({ allowed_models: null, daily_token_budget: null });
  });

  it('only a platform administrator may read or set it: a school administrator of the same school and of another school are refused, and nothing changes', async () => {
    const body = { allowedModels: ['*'], dailyTokenBudget: null };
    const audited = (await auditRows(schoolA.id)).length;
    for (const admin of [schoolA.personas.schoolAdmin, schoolB.personas.schoolAdmin]) {
      const put = await rest(admin, 'PUT', policyPath(schoolA.id), body);
      expect(put).toMatchObject({ status: 403, body: { code: 'PERMISSION_DENIED' } });
      expect((await rest(admin, 'GET', policyPath(schoolA.id))).status).toBe(403);
    }
    // A school administrator cannot borrow the platform's target-school header either.
    expect((await rest(schoolA.personas.schoolAdmin, 'PUT', policyPath(schoolA.id), body, schoolA.id)).status).toBe(403);
    expect(await stored(schoolA.id)).toEqual({ allowed_models: null, daily_token_budget: null });
    expect(await auditRows(schoolA.id)).toHaveLength(audited);
  });

  it('a platform administrator must choose the school first, and the path must name that school', async () => {
    const body = { allowedModels: [], dailyTokenBudget: null };
    expect(await rest(platformAdmin, 'PUT', policyPath(schoolA.id), body)).toMatchObject({ status: 403, body: { code: 'PLATFORM_WRITE_NEEDS_SCHOOL' } });
    expect(await rest(platformAdmin, 'PUT', policyPath(schoolA.id), body, schoolB.id)).toMatchObject({ status: 400 });
    expect(await stored(schoolA.id)).toEqual({ allowed_models: null, daily_token_budget: null });
    expect(await stored(schoolB.id)).toEqual({ allowed_models: null, daily_token_budget: null });
  });

  it('refuses entries that are not provider or provider:model, "*" beside others, and a budget that is not a positive whole number', async () => {
    const audited = (await auditRows(schoolA.id)).length;
    for (const body of [
      { allowedModels: ['open ai'], dailyTokenBudget: null },
      { allowedModels: ['*', 'openai'], dailyTokenBudget: null },
      { allowedModels: ['openai'], dailyTokenBudget: 0 },
      { allowedModels: ['openai'] },
    ]) {
      expect(await rest(platformAdmin, 'PUT', policyPath(schoolA.id), body, schoolA.id)).toMatchObject({ status: 400 });
    }
    expect(await auditRows(schoolA.id)).toHaveLength(audited);
  });
});

describe('the lease claim enforces the school data choice before anything is sent to a model', () => {
  it('a model the platform default allows is granted; one it does not is refused, the run fails with the sentence and the lease is taken back', async () => {
    const persona = schoolB.personas.schoolAdmin;
    expect((await claimAs(persona, OPENAI)).answer).toMatchObject({ granted: true });

    const refused = await claimAs(persona, CLAUDE);
    expect(refused.answer).toEqual({ granted: false, reason: 'model_not_allowed' });
    expect(refused.run).toEqual({ status: 'failed', error: ERROR_SENTENCES.MODEL_NOT_ALLOWED, error_code: 'MODEL_NOT_ALLOWED', lease_worker: null });
    expect(await storedEvents(refused.step.runId)).toEqual([
      expect.objectContaining({ type: 'RUN_ERROR', code: 'MODEL_NOT_ALLOWED', message: ERROR_SENTENCES.MODEL_NOT_ALLOWED }),
    ]);
    // The worker cannot go on with the step: a second claim finds the run over.
    expect((await worker.claim(refused.step.token, { model: CLAUDE })).granted).toBe(false);
  });

  it("the thread's next queued run starts as soon as a refused claim has ended the run before it", async () => {
    const persona = schoolB.personas.schoolAdmin;
    const step = await startRunAndTakeStep(testApp, broker, persona);
    const queued = await agentRequest(testApp.app, testApp, persona, 'POST', `/agent/threads/${step.threadId}/runs`, {
      message: 'List my staff',
      multitaskStrategy: 'enqueue',
    });
    expect(queued).toMatchObject({ status: 201, body: { status: 'queued' } });

    expect(await worker.claim(step.token, { model: CLAUDE })).toEqual({ granted: false, reason: 'model_not_allowed' });
    // Dispatched by the refused claim itself: the sweeper's timer is off in tests.
    expect((await takeStep(broker)).runId).toBe((queued.body as { runId: string }).runId);
  });

  it("a school's own choice overrides the platform default, and another school's choice does not apply", async () => {
    await setChoice(schoolA.id, ['anthropic:claude-sonnet-4-5']);
    expect((await claimAs(schoolA.personas.schoolAdmin, CLAUDE)).answer).toMatchObject({ granted: true });
    expect((await claimAs(schoolA.personas.schoolAdmin, OPENAI)).answer).toEqual({ granted: false, reason: 'model_not_allowed' });
    // School B still follows the platform default.
    expect((await claimAs(schoolB.personas.schoolAdmin, CLAUDE)).answer).toEqual({ granted: false, reason: 'model_not_allowed' });
    expect((await claimAs(schoolB.personas.schoolAdmin, OPENAI)).answer).toMatchObject({ granted: true });
  });

  it('a provider entry allows every model of the provider; a provider:model entry that model alone', async () => {
    await setChoice(schoolA.id, ['anthropic']);
    expect((await claimAs(schoolA.personas.schoolAdmin, { model: 'anthropic:claude-opus-4', selfHosted: false })).answer).toMatchObject({ granted: true });
    await setChoice(schoolA.id, ['anthropic:claude-sonnet-4-5']);
    expect((await claimAs(schoolA.personas.schoolAdmin, { model: 'anthropic:claude-opus-4', selfHosted: false })).answer).toEqual({
      granted: false,
      reason: 'model_not_allowed',
    });
  });

  it('"none" refuses every hosted model, but the scripted model and a self-hosted one are always allowed', async () => {
    await setChoice(schoolA.id, []);
    const persona = schoolA.personas.schoolAdmin;
    expect((await claimAs(persona, OPENAI)).answer).toEqual({ granted: false, reason: 'model_not_allowed' });
    expect((await claimAs(persona, { model: 'scripted', selfHosted: false })).answer).toMatchObject({ granted: true });
    expect((await claimAs(persona, { model: 'openai:llama-3.1-8b', selfHosted: true })).answer).toMatchObject({ granted: true });
  });

  it('a claim that names no model counts as an unknown hosted model: refused unless the school allows every model', async () => {
    const persona = schoolA.personas.schoolAdmin;
    expect((await claimAs(persona, undefined)).answer).toEqual({ granted: false, reason: 'model_not_allowed' });
    await setChoice(schoolA.id, ['*']);
    expect((await claimAs(persona, undefined)).answer).toMatchObject({ granted: true });
  });

  it("a platform administrator's run with no target school reads across schools: every school's choice must allow the model", async () => {
    expect((await claimAs(platformAdmin, OPENAI)).answer).toMatchObject({ granted: true });
    await setChoice(schoolB.id, []);
    const refused = await claimAs(platformAdmin, OPENAI);
    expect(refused.answer).toEqual({ granted: false, reason: 'model_not_allowed' });
    expect(refused.run.error_code).toBe('MODEL_NOT_ALLOWED');
  });
});
