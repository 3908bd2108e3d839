import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { generateMessageSigningKeyPair } from '@naalya/rmq';
import { describe, expect, it } from 'vitest';

// Each built app started as an operator would start it in production (NODE_ENV=production), once per secret published in
// the repository: it must exit 1 before connecting anything, naming the variable and never printing the secret. The
// good configuration around each published value is one the apps accept, so the refusal is that value's alone. Nothing
// listens on the hosts below: an app that got past its configuration would fail later with another message.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = { server: `${ROOT}apps/server/dist/main.js`, worker: `${ROOT}apps/worker/dist/main.js` };
const keys = generateMessageSigningKeyPair('prod-test');
const strong = () => randomBytes(24).toString('hex');

const GOOD = {
  server: {
    DATABASE_URL: `postgres://naalya_app:${strong()}@127.0.0.1:1/naalya`,
    RABBITMQ_URL: `amqp://naalya_server:${strong()}@127.0.0.1:1/naalya`,
    JWT_SECRET: strong(),
    DISPATCH_SIGNING_KEY: strong(),
    RUN_SIGNING_KEY: keys.privateKey,
  },
  worker: {
    RABBITMQ_URL: `amqp://naalya_worker:${strong()}@127.0.0.1:1/naalya`,
    CHECKPOINT_DATABASE_URL: `postgres://naalya_checkpoint:${strong()}@127.0.0.1:1/naalya`,
    SERVER_BROKER_USER: 'naalya_server',
    RUN_SIGNING_PUBLIC_KEYS: keys.publicKey,
    AGENT_MODEL: 'scripted',
    WORKER_HEALTH_PORT: '0',
  },
} as const;

type App = keyof typeof GOOD;

// Nest's first line once the configuration was read: the app got past it (and is killed there, with nothing to reach).
const PAST_CONFIGURATION = /Starting Nest application/;

const startInProduction = (app: App, env: Record<string, string>) =>
  new Promise<{ code: number | null; output: string; pastConfiguration: boolean }>((resolve) => {
    const child = spawn(process.execPath, [MAIN[app]], { env: { PATH: process.env['PATH'], NODE_ENV: 'production', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (PAST_CONFIGURATION.test(output)) child.kill('SIGKILL');
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output, pastConfiguration: PAST_CONFIGURATION.test(output) });
    });
  });

// What .env.example publishes (and the compose placeholders), per app and variable: the file's own values.
const CASES: Array<{ app: App; variable: string; value: string; secret: string; reason: RegExp }> = [
  { app: 'server', variable: 'JWT_SECRET', value: 'local-development-secret-change-me-0123456789', secret: 'local-development-secret-change-me-0123456789', reason: /published/ },
  { app: 'server', variable: 'DISPATCH_SIGNING_KEY', value: 'local-dispatch-signing-key-change-me-0123456789', secret: 'local-dispatch-signing-key-change-me-0123456789', reason: /published/ },
  { app: 'server', variable: 'JWT_SECRET', value: 'replace-me-jwt-secret-at-least-32-characters', secret: 'replace-me-jwt-secret-at-least-32-characters', reason: /published/ },
  { app: 'server', variable: 'DATABASE_URL', value: 'postgres://naalya_app:naalya_app_local@127.0.0.1:1/naalya', secret: 'naalya_app_local', reason: /password published/ },
  { app: 'server', variable: 'RABBITMQ_URL', value: 'amqp://naalya_server:naalya_server_local@127.0.0.1:1/naalya', secret: 'naalya_server_local', reason: /password published/ },
  { app: 'server', variable: 'DATABASE_URL', value: 'postgres://naalya_app:short-password@127.0.0.1:1/naalya', secret: 'short-password', reason: /shorter than 16/ },
  { app: 'worker', variable: 'RABBITMQ_URL', value: 'amqp://naalya_worker:naalya_worker_local@127.0.0.1:1/naalya', secret: 'naalya_worker_local', reason: /password published/ },
  { app: 'worker', variable: 'CHECKPOINT_DATABASE_URL', value: 'postgres://naalya_checkpoint:naalya_checkpoint_local@127.0.0.1:1/naalya', secret: 'naalya_checkpoint_local', reason: /password published/ },
  { app: 'worker', variable: 'RABBITMQ_URL', value: 'amqp://naalya_worker:replace-me-worker-broker-password@127.0.0.1:1/naalya', secret: 'replace-me-worker-broker-password', reason: /password published/ },
];

describe.concurrent('NODE_ENV=production: both apps refuse a secret published in the repository', () => {
  it.each(CASES)('the $app refuses $variable ($reason)', async ({ app, variable, value, secret, reason }) => {
    const { code, output } = await startInProduction(app, { ...GOOD[app], [variable]: value });
    expect(code, output).toBe(1);
    const line = output.split('\n').find((text) => text.includes(variable) && reason.test(text));
    expect(line, output).toBeDefined();
    expect(output).not.toContain(secret);
  });

  it.each(['server', 'worker'] as const)('the %s starts in production with secrets of its own: each refusal is that value\'s alone', async (app) => {
    const { output, pastConfiguration } = await startInProduction(app, GOOD[app]);
    expect(pastConfiguration, output).toBe(true);
  });

  it('outside production a published value is accepted, so .env.example keeps working on a laptop', async () => {
    const { output, pastConfiguration } = await startInProduction('server', { ...GOOD.server, NODE_ENV: 'development', JWT_SECRET: 'local-development-secret-change-me-0123456789' });
    expect(pastConfiguration, output).toBe(true);
  });
});
