import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import amqp from 'amqplib';
import pg from 'pg';

const SERVER_DIST = fileURLToPath(new URL('../../../server/dist/', import.meta.url));
const WORKER_MAIN = fileURLToPath(new URL('../../../worker/dist/main.js', import.meta.url));
const HUB_INDEX = fileURLToPath(new URL('../../dist/index.html', import.meta.url));
const OWNER_URL = process.env['TEST_DATABASE_OWNER_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const CHECKPOINT_ROLE = { name: 'naalya_checkpoint_hub', password: 'naalya_checkpoint_hub' };
export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

const databaseUrl = (database: string, user?: { name: string; password: string }) => {
  const url = new URL(OWNER_URL);
  url.pathname = `/${database}`;
  if (user) {
    url.username = user.name;
    url.password = user.password;
  }
  return url.toString();
};

/** Debian's chromium, installed on first use if it is missing; otherwise a clear message, not a cryptic launch error. */
export const ensureChromium = (): string => {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  const install = spawnSync('sh', ['-c', 'apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)'], {
    encoding: 'utf8',
    timeout: 240_000,
  });
  if (existsSync(CHROMIUM)) return CHROMIUM;
  throw new Error(
    `The Hub's browser tests need Debian's chromium at ${CHROMIUM} and could not install it (apt-get install -y chromium): ${(install.stderr || install.stdout || String(install.error)).slice(-500)}`,
  );
};

/**
 * The topology rmq-setup declared for these queue names (libs/rmq rmqNames: the run events exchange and its ingest
 * queue, the dead-letter exchange and queue). Done with amqplib here rather than through @naalya/rmq, so the Hub's
 * project depends on the contract libraries only, tests included.
 */
const deleteQueues = async (toolsQueue: string, runsQueue: string) => {
  const connection = await amqp.connect(RABBITMQ_URL);
  try {
    const channel = await connection.createChannel();
    for (const queue of [toolsQueue, runsQueue, `${runsQueue}.events.ingest`, `${toolsQueue}.dead-letter`]) await channel.deleteQueue(queue);
    for (const exchange of [`${toolsQueue}.dlx`, `${toolsQueue}.calls`, `${runsQueue}.events`]) await channel.deleteExchange(exchange);
    await channel.close();
  } finally {
    await connection.close();
  }
};

const runCli = (script: string, env: Record<string, string>, args: string[] = []) => {
  const result = spawnSync(process.execPath, [`${SERVER_DIST}cli/${script}`, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${script} failed: ${result.stderr || result.stdout}`);
};

const waitFor = async (what: string, check: () => Promise<boolean> | boolean, child: ChildProcess, output: () => string, ms: number) => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (child.exitCode !== null) throw new Error(`The ${what} exited at start-up:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`The ${what} was not ready within ${ms / 1000} s:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

export type HubStack = {
  baseUrl: string;
  /** The REST API as a demo user (for setting up or checking what the browser did). */
  api: <T>(email: string, path: string, body?: unknown) => Promise<{ status: number; body: T }>;
  teardown: () => Promise<void>;
};

/**
 * The built server (serving the built Hub under /hub/) and the built worker (scripted model) as two processes, on a
 * database and queues of their own, set up the way a user sets them up: the server's CLIs create the roles, migrate,
 * seed and declare the broker topology.
 */
export const startHubStack = async (): Promise<HubStack> => {
  if (!existsSync(HUB_INDEX)) throw new Error(`The Hub is not built (${HUB_INDEX}): run npx nx run-many -t build first.`);
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const database = `naalya_hub_${suffix}`;
  // Below Linux's ephemeral range (32768 and up), where outgoing connections take their ports: a restart on this port
  // after a kill could otherwise find it taken.
  const port = 20_000 + Math.floor(Math.random() * 12_000);
  const toolsQueue = `agent-tools-hub-${suffix}`;
  const runsQueue = `agent-runs-hub-${suffix}`;
  const checkpointUrl = databaseUrl(database, CHECKPOINT_ROLE);
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl(database, { name: 'naalya_app_test', password: 'naalya_app_test' }),
    DATABASE_OWNER_URL: databaseUrl(database),
    CHECKPOINT_DATABASE_URL: checkpointUrl,
    DATABASE_POOL_SIZE: '4',
    RABBITMQ_URL,
    AGENT_TOOLS_QUEUE: toolsQueue,
    AGENT_RUNS_QUEUE: runsQueue,
    JWT_SECRET: 'hub-secret-hub-secret-hub-secret-00000',
    DISPATCH_SIGNING_KEY: 'hub-dispatch-key-hub-dispatch-key-0000',
    WORKER_BROKER_USER: new URL(RABBITMQ_URL).username || 'guest',
    HTTP_PORT: String(port),
    SHUTDOWN_DRAIN_TIMEOUT_MS: '3000',
    LOG_LEVEL: 'warn',
  };
  runCli('db-setup.js', env);
  runCli('db-seed.js', env, ['--reset']);
  runCli('rmq-setup.js', env);

  const children: ChildProcess[] = [];
  const spawnBuilt = (main: string, own: Record<string, string>) => {
    const child = spawn(process.execPath, [main], { env: { ...process.env, ...own }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    children.push(child);
    return { child, output: () => output };
  };
  const stopAll = async () => {
    await Promise.all(
      children
        .filter((child) => child.exitCode === null)
        .map((child) => {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGKILL');
          return exited;
        }),
    );
  };
  const teardown = async () => {
    await stopAll();
    const maintenance = new pg.Client({ connectionString: databaseUrl('postgres') });
    await maintenance.connect();
    await maintenance.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await maintenance.end();
    await deleteQueues(toolsQueue, runsQueue);
  };

  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    const server = spawnBuilt(`${SERVER_DIST}main.js`, env);
    await waitFor('server', () => fetch(`${baseUrl}/ready`).then((response) => response.ok, () => false), server.child, server.output, 30_000);
    // 'log' prints the line the worker's readiness is read from; loading LangChain takes seconds.
    // The worker gets its own section only: the broker, its queues and its checkpoints, no server secret.
    const worker = spawnBuilt(WORKER_MAIN, {
      RABBITMQ_URL,
      AGENT_TOOLS_QUEUE: toolsQueue,
      AGENT_RUNS_QUEUE: runsQueue,
      CHECKPOINT_DATABASE_URL: checkpointUrl,
      AGENT_MODEL: 'scripted',
      TOOL_CALL_TIMEOUT_MS: '5000',
      LOG_LEVEL: 'log',
    });
    await waitFor('worker', () => worker.output().includes('Worker ready'), worker.child, worker.output, 60_000);
  } catch (error) {
    await teardown();
    throw error;
  }

  const tokens = new Map<string, string>();
  const login = async (email: string) => {
    const known = tokens.get(email);
    if (known) return known;
    const response = await fetch(`${baseUrl}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'naalya-demo' }),
    });
    if (!response.ok) throw new Error(`login ${email}: ${response.status}`);
    const { accessToken } = (await response.json()) as { accessToken: string };
    tokens.set(email, accessToken);
    return accessToken;
  };
  const api = async <T>(email: string, path: string, body?: unknown) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await login(email)}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as T };
  };

  return { baseUrl, api, teardown };
};
