import { request as httpRequest } from 'node:http';
import pg from 'pg';
import type { INestApplication } from '@nestjs/common';
import { HTTP_ERROR_SENTENCES } from '@naalya/access';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, startServerInstance, type TestApp } from '../../../testing/test-app.js';
import { DEMO_PASSWORD } from '../../seed/demo-seed.js';
import { LoginAttemptLimiter } from './login-attempt-limiter.js';

const PER_ACCOUNT = 3;
const PER_ADDRESS = 6;
// The test runner connects from 127.0.0.1: that one peer is the "load balancer". Every other 127.x address is a client
// connecting directly (Linux routes all of 127.0.0.0/8 to the loopback interface).
const LIMITS = { LOGIN_ATTEMPTS_PER_ACCOUNT: PER_ACCOUNT, LOGIN_ATTEMPTS_PER_ADDRESS: PER_ADDRESS, TRUSTED_PROXIES: '127.0.0.1/32, 10.0.0.0/8' };

let testApp: TestApp;
let replica: INestApplication;

beforeAll(async () => {
  testApp = await createTestApp(LIMITS);
  // A second server process on the same database: the counts are PostgreSQL's, so both spend one allowance.
  replica = (await startServerInstance(testApp.database, LIMITS)).app;
});
afterAll(async () => {
  await replica?.close();
  await testApp?.close();
});

type Answer = { status: number; body: Record<string, unknown> };

/** POST /auth/login from a chosen local address (the TCP peer the server sees), with an optional X-Forwarded-For. */
const login = async (
  email: string,
  password: string,
  options: { from: string; forwardedFor?: string; app?: INestApplication },
): Promise<Answer> => {
  const url = new URL(`${await (options.app ?? testApp.app).getUrl()}/auth/login`);
  const payload = JSON.stringify({ email, password });
  return new Promise((resolve, reject) => {
    const call = httpRequest(
      {
        host: '127.0.0.1',
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: options.from,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...(options.forwardedFor ? { 'x-forwarded-for': options.forwardedFor } : {}),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> }));
      },
    );
    call.on('error', reject);
    call.end(payload);
  });
};

const REFUSED = { status: 429, body: expect.objectContaining({ message: HTTP_ERROR_SENTENCES.LOGIN_ATTEMPTS_EXCEEDED, code: 'LOGIN_ATTEMPTS_EXCEEDED' }) };
const WRONG = { status: 401, body: expect.objectContaining({ code: 'UNAUTHENTICATED' }) };
const statuses = (answers: Answer[]) => answers.map((answer) => answer.status);
const greenhill = () => testApp.demo.schools[0].personas;

describe('LOGIN_ATTEMPTS_PER_ACCOUNT', () => {
  it(`after ${PER_ACCOUNT} attempts on one account, the next answers 429 even with the right password, and case variants share the count`, async () => {
    const { email } = greenhill().teacher;
    for (let attempt = 0; attempt < PER_ACCOUNT; attempt += 1) {
      expect(await login(attempt === 1 ? email.toUpperCase() : email, 'wrong-password', { from: '127.0.0.2' })).toEqual(WRONG);
    }
    expect(await login(email, DEMO_PASSWORD, { from: '127.0.0.2' })).toEqual(REFUSED);
    // Another address does not help: the count is the account's.
    expect(await login(` ${email.toUpperCase()} `, DEMO_PASSWORD, { from: '127.0.0.3' })).toEqual(REFUSED);
    // Another account from the same address is unaffected.
    expect((await login(greenhill().departmentHead.email, DEMO_PASSWORD, { from: '127.0.0.2' })).status).toBe(200);
  });

  it('a successful login clears its account count, so a user who mistyped starts afresh', async () => {
    const { email } = greenhill().subjectTeacher;
    for (let attempt = 0; attempt < PER_ACCOUNT - 1; attempt += 1) expect(await login(email, 'wrong', { from: '127.0.0.4' })).toEqual(WRONG);
    expect((await login(email, DEMO_PASSWORD, { from: '127.0.0.4' })).status).toBe(200);
    for (let attempt = 0; attempt < PER_ACCOUNT; attempt += 1) expect(await login(email, 'wrong', { from: '127.0.0.4' })).toEqual(WRONG);
    expect(await login(email, DEMO_PASSWORD, { from: '127.0.0.4' })).toEqual(REFUSED);
  });

  it('a new window starts a new count', async () => {
    const limiter = testApp.module.get(LoginAttemptLimiter);
    const now = Date.now();
    for (let attempt = 0; attempt < PER_ACCOUNT; attempt += 1) await limiter.take('window@example.test', '192.0.2.50', now);
    await expect(limiter.take('window@example.test', '192.0.2.50', now)).rejects.toThrow(HTTP_ERROR_SENTENCES.LOGIN_ATTEMPTS_EXCEEDED);
    await expect(limiter.take('window@example.test', '192.0.2.50', now + 900_000)).resolves.toBeUndefined();
    // Pruning drops the past window's rows and keeps the current one's.
    expect(await limiter.prune(now + 900_000)).toBeGreaterThan(0);
    await expect(limiter.take('window@example.test', '192.0.2.50', now + 900_000)).resolves.toBeUndefined();
  });
});

describe('LOGIN_ATTEMPTS_PER_ADDRESS', () => {
  it(`after ${PER_ADDRESS} attempts from one address on different accounts, the next answers 429; another address is unaffected`, async () => {
    for (let attempt = 0; attempt < PER_ADDRESS; attempt += 1) {
      expect(await login(`nobody${attempt}@greenhill.school`, 'guess', { from: '127.0.0.5' })).toEqual(WRONG);
    }
    expect(await login(greenhill().schoolAdmin.email, DEMO_PASSWORD, { from: '127.0.0.5' })).toEqual(REFUSED);
    expect((await login(greenhill().schoolAdmin.email, DEMO_PASSWORD, { from: '127.0.0.6' })).status).toBe(200);
  });

  it('X-Forwarded-For from a peer that is not a trusted proxy is ignored: a fresh header per attempt does not escape the count', async () => {
    for (let attempt = 0; attempt < PER_ADDRESS; attempt += 1) {
      expect(await login(`spoof${attempt}@greenhill.school`, 'guess', { from: '127.0.0.7', forwardedFor: `198.51.100.${attempt}` })).toEqual(WRONG);
    }
    expect(await login('spoof-next@greenhill.school', 'guess', { from: '127.0.0.7', forwardedFor: '198.51.100.200' })).toEqual(REFUSED);
    // Nor can it name a trusted proxy as a hop to be believed.
    expect(await login('spoof-next@greenhill.school', 'guess', { from: '127.0.0.7', forwardedFor: '203.0.113.9, 10.1.2.3' })).toEqual(REFUSED);
  });

  it("behind a trusted proxy the client is the last untrusted X-Forwarded-For entry; entries the client wrote before it are not believed", async () => {
    const proxy = { from: '127.0.0.1' };
    for (let attempt = 0; attempt < PER_ADDRESS; attempt += 1) {
      // The client prepends a fresh address each time; the proxies (10.0.0.5, then the peer) append the real one.
      const forwardedFor = `198.51.100.${attempt}, 203.0.113.7, 10.0.0.5`;
      expect(await login(`proxied${attempt}@greenhill.school`, 'guess', { ...proxy, forwardedFor })).toEqual(WRONG);
    }
    expect(await login('proxied-next@greenhill.school', 'guess', { ...proxy, forwardedFor: '203.0.113.7' })).toEqual(REFUSED);
    // Another client behind the same proxy has its own count, so the proxy's address is not what is counted.
    expect(await login('proxied-next@greenhill.school', 'guess', { ...proxy, forwardedFor: '203.0.113.8' })).toEqual(WRONG);
  });
});

describe('two servers share the counts', () => {
  it('attempts on either replica spend one account allowance', async () => {
    const { email } = testApp.demo.schools[1].personas.teacher;
    expect(await login(email, 'wrong', { from: '127.0.0.8' })).toEqual(WRONG);
    expect(await login(email, 'wrong', { from: '127.0.0.8', app: replica })).toEqual(WRONG);
    expect(await login(email, 'wrong', { from: '127.0.0.8' })).toEqual(WRONG);
    expect(await login(email, DEMO_PASSWORD, { from: '127.0.0.8', app: replica })).toEqual(REFUSED);
  });

  it('concurrent attempts on both replicas never pass the limit', async () => {
    const { email } = testApp.demo.schools[1].personas.departmentHead;
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, index) => login(email, 'wrong', { from: `127.0.1.${index + 1}`, app: index % 2 ? replica : testApp.app })),
    );
    expect(statuses(answers).sort()).toEqual([...Array(PER_ACCOUNT).fill(401), ...Array(10 - PER_ACCOUNT).fill(429)]);
  });
});

describe('the counters table', () => {
  it('the app role reaches it only through the functions, and it holds hashes, never an email or an address', async () => {
    const client = new pg.Client({ connectionString: testApp.database.appUrl });
    await client.connect();
    try {
      await expect(client.query(`SELECT * FROM login_attempt_counters`)).rejects.toThrow(/permission denied/);
      await expect(client.query(`DELETE FROM login_attempt_counters`)).rejects.toThrow(/permission denied/);
    } finally {
      await client.end();
    }
    const keys = ((await testApp.owner.query(`SELECT key FROM login_attempt_counters`)) as { key: string }[]).map((row) => row.key);
    expect(keys.length).toBeGreaterThan(0);
    for (const key of keys) expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });
});
