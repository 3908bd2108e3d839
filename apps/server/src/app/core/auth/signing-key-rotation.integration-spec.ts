import type { INestApplication } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { listMyClassesTool } from '@naalya/agent-tools';
import jwt from 'jsonwebtoken';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createAgentTestApp,
  createTestBroker,
  queueOverrides,
  runEvents,
  serveWorkerCalls,
  startRunAndTakeStep,
  type TakenStep,
  type TestBroker,
  type TestWorkerCalls,
} from '../../naalya-ai/fixtures/agent-run-test-kit.js';
import { startAgentRunMessaging } from '../../naalya-ai/agent-run-messaging.js';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { startServerInstance, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { DEMO_PASSWORD } from '../../seed/demo-seed.js';
import type { ServerConfig } from '../config/server-config.js';

// Test keys of this file only (two generations of each).
const JWT_1 = 'k1:jwt-key-one-jwt-key-one-jwt-key-one-000';
const JWT_2 = 'k2:jwt-key-two-jwt-key-two-jwt-key-two-000';
const DISPATCH_1 = 'k1:dispatch-one-dispatch-one-dispatch-one-0';
const DISPATCH_2 = 'k2:dispatch-two-dispatch-two-dispatch-two-0';

/**
 * The three configurations of a rotation, as a rolling deploy goes through them: the new key staged (verified, not yet
 * signing) on every replica; the new key current with the old one previous; the old one retired.
 */
const STAGED: Partial<ServerConfig> = { JWT_SECRET: JWT_1, JWT_PREVIOUS_SECRETS: JWT_2, DISPATCH_SIGNING_KEY: DISPATCH_1, DISPATCH_PREVIOUS_SIGNING_KEYS: DISPATCH_2 };
const ROTATED: Partial<ServerConfig> = { JWT_SECRET: JWT_2, JWT_PREVIOUS_SECRETS: JWT_1, DISPATCH_SIGNING_KEY: DISPATCH_2, DISPATCH_PREVIOUS_SIGNING_KEYS: DISPATCH_1 };
const RETIRED: Partial<ServerConfig> = { JWT_SECRET: JWT_2, JWT_PREVIOUS_SECRETS: '', DISPATCH_SIGNING_KEY: DISPATCH_2, DISPATCH_PREVIOUS_SIGNING_KEYS: '' };

let broker: TestBroker;
/** The replica that ran before the rotation (STAGED): the run under test starts here. */
let testApp: TestApp;
/** A replica restarted with the new key current (ROTATED), beside the old one. */
let rotated: { app: INestApplication; module: TestingModule };
let worker: TestWorkerCalls;
let step: TakenStep;
let loginBefore: string;

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names, STAGED);
});
afterAll(async () => {
  await worker?.close();
  await rotated?.app.close();
  await testApp?.close();
  await broker?.close();
});

const persona = () => testApp.demo.schools[0].personas.schoolAdmin;

const login = async (app: INestApplication): Promise<string> => {
  const response = await fetch(`${await app.getUrl()}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: persona().email, password: DEMO_PASSWORD }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { accessToken: string }).accessToken;
};
const me = async (app: INestApplication, token: string) =>
  (await fetch(`${await app.getUrl()}/auth/me`, { headers: { authorization: `Bearer ${token}` } })).status;
const kidOf = (token: string) => jwt.decode(token, { complete: true })?.header.kid;
const runStatus = async (runId: string) => ((await testApp.owner.query(`SELECT status FROM agent_runs WHERE id = $1`, [runId])) as { status: string }[])[0]?.status;
const epochOf = async (runId: string) => ((await testApp.owner.query(`SELECT epoch FROM agent_runs WHERE id = $1`, [runId])) as { epoch: number }[])[0]?.epoch ?? 0;

describe('signing keys rotate without logging anybody out or interrupting a run', () => {
  it('before the rotation: tokens name the current key id k1; a session and a run start', async () => {
    loginBefore = await login(testApp.app);
    expect(kidOf(loginBefore)).toBe('k1');
    step = await startRunAndTakeStep(testApp, broker, persona());
    expect(step.token.split('.').slice(0, 2)).toEqual(['v2', 'k1']);
  });

  it('a replica with the new key current accepts the old session, signs new ones with k2, and the old replica (k2 staged) accepts those', async () => {
    rotated = await startServerInstance(testApp.database, { ...ROTATED, ...queueOverrides(broker.names) });
    await startAgentRunMessaging(rotated.app);
    expect(await me(rotated.app, loginBefore)).toBe(200);
    const loginAfter = await login(rotated.app);
    expect(kidOf(loginAfter)).toBe('k2');
    // Mid-rollout a client's next request may reach either replica.
    expect(await me(testApp.app, loginAfter)).toBe(200);
  });

  it('the run started before the rotation finishes on the rotated replica: its lease, a tool call, its usage and its events all verify', async () => {
    worker = await serveWorkerCalls({ ...testApp, app: rotated.app, module: rotated.module }, broker.names);
    expect(await worker.claim(step.token)).toMatchObject({ granted: true });
    const envelope = await dispatchEnvelope(persona(), listMyClassesTool, {}, { run: step, epoch: await epochOf(step.runId), signingKey: DISPATCH_1 });
    expect(envelope.meta.dispatchToken?.split('.')[1]).toBe('k1');
    expect(await invokeTool(rotated.module, listMyClassesTool, envelope)).toHaveProperty('data');
    expect(await worker.reportUsage(step.token, { inputTokens: 10, outputTokens: 2 })).toMatchObject({ proceed: true });
    const events = runEvents(step);
    await broker.publishEvent([events.started(), events.text('m1', 'Done.'), events.finished()]);
    const deadline = Date.now() + 5_000;
    while ((await runStatus(step.runId)) !== 'finished' && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await runStatus(step.runId)).toBe('finished');
  });

  it('once the old key is retired, its sessions and dispatch tokens are refused; the new key’s still work', async () => {
    await worker.close();
    await rotated.app.close();
    const retired = await startServerInstance(testApp.database, { ...RETIRED, ...queueOverrides(broker.names) });
    try {
      worker = await serveWorkerCalls({ ...testApp, app: retired.app, module: retired.module }, broker.names);
      expect(await me(retired.app, loginBefore)).toBe(401);
      const loginNow = await login(retired.app);
      expect(await me(retired.app, loginNow)).toBe(200);
      // An old run's token: refused, as a token the server never signed is.
      expect(await worker.claim(step.token)).toEqual({ granted: false, reason: 'refused' });
      const oldCall = await dispatchEnvelope(persona(), listMyClassesTool, {}, { run: step, signingKey: DISPATCH_1 });
      expect(await invokeTool(retired.module, listMyClassesTool, oldCall)).toMatchObject({ code: 'DISPATCH_REFUSED' });
    } finally {
      await worker.close();
      await retired.app.close();
    }
  });

  it('a token signed before key ids (no kid header) verifies with the key now called "default", and only while it is held', async () => {
    const legacySecret = 'legacy-secret-legacy-secret-legacy-secret-0';
    const legacy = jwt.sign({ sub: persona().id, type: persona().type, schoolId: persona().schoolId, campusId: persona().campusId }, legacySecret, {
      algorithm: 'HS256',
      expiresIn: 600,
    });
    const upgraded = await startServerInstance(testApp.database, { ...RETIRED, JWT_PREVIOUS_SECRETS: `default:${legacySecret}` });
    const without = await startServerInstance(testApp.database, RETIRED);
    try {
      expect(await me(upgraded.app, legacy)).toBe(200);
      expect(await me(without.app, legacy)).toBe(401);
    } finally {
      await upgraded.app.close();
      await without.app.close();
    }
  });
});
