// The built server on a database and queues of the bench's own, set up the way a user sets it up: the server's
// CLIs create the roles, migrate, seed and declare the broker topology (same shape as apps/worker/test/support).
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SERVER_DIST = `${ROOT}apps/server/dist/`;
const WORKER_DIST = `${ROOT}apps/worker/dist/`;
export const OWNER_URL = process.env.TEST_DATABASE_OWNER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const RABBITMQ_URL = process.env.RABBITMQ_TEST_URL ?? 'amqp://guest:guest@127.0.0.1:5672';
export const APP_ROLE = { name: 'naalya_app_bench', password: 'naalya_app_bench' };

export const databaseUrl = (database, user) => {
  const url = new URL(OWNER_URL);
  url.pathname = `/${database}`;
  if (user) {
    url.username = user.name;
    url.password = user.password;
  }
  return url.toString();
};

const runCli = (script, env, args = []) => {
  const result = spawnSync(process.execPath, [`${SERVER_DIST}cli/${script}`, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${script} failed: ${result.stderr || result.stdout}`);
};

/**
 * `template`: a database this one is copied from (CREATE DATABASE ... TEMPLATE) instead of being set up and seeded by
 * the CLIs, for suites that need many fresh copies of the same seeded database. `prefix` names the database.
 * @param {{ poolSize: number, template?: string, prefix?: string }} options
 */
export const createStack = async ({ poolSize, template, prefix = 'naalya_bench' }) => {
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const database = `${prefix}_${suffix}`;
  const env = {
    DATABASE_URL: databaseUrl(database, APP_ROLE),
    DATABASE_OWNER_URL: databaseUrl(database),
    DATABASE_POOL_SIZE: String(poolSize),
    RABBITMQ_URL,
    AGENT_TOOLS_QUEUE: `agent-tools-bench-${suffix}`,
    AGENT_RUNS_QUEUE: `agent-runs-bench-${suffix}`,
    JWT_SECRET: 'bench-secret-bench-secret-bench-secret-00',
    // Read by servers that sign dispatch tokens and pin the worker's broker user; ignored by those that do not.
    DISPATCH_SIGNING_KEY: 'bench-dispatch-key-bench-dispatch-key-000',
    WORKER_BROKER_USER: decodeURIComponent(new URL(RABBITMQ_URL).username || 'guest'),
    // One user at thousands of calls a second is a load test, not a person: the per-minute quotas (an in-memory flood
    // brake, no statement) still run on every call, with limits the bench never reaches.
    TOOL_CALLS_PER_MINUTE_PER_SCHOOL: '1000000000',
    TOOL_CALLS_PER_MINUTE_PER_USER: '1000000000',
    SHUTDOWN_DRAIN_TIMEOUT_MS: '3000',
    LOG_LEVEL: 'error',
  };
  if (template) {
    const maintenance = new pg.Client({ connectionString: databaseUrl('postgres') });
    await maintenance.connect();
    await maintenance.query(`CREATE DATABASE "${database}" TEMPLATE "${template}"`).finally(() => maintenance.end());
  } else {
    runCli('db-setup.js', env);
    runCli('db-seed.js', env, ['--reset']);
  }
  runCli('rmq-setup.js', env);
  const owner = new pg.Client({ connectionString: env.DATABASE_OWNER_URL });
  await owner.connect();
  const teardown = async () => {
    await owner.end().catch(() => undefined);
    const maintenance = new pg.Client({ connectionString: databaseUrl('postgres') });
    await maintenance.connect();
    await maintenance.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await maintenance.end();
  };
  return { env, database, suffix, owner, toolsQueue: env.AGENT_TOOLS_QUEUE, teardown };
};

/**
 * Spawns a built entry point with its output kept; resolves once `isReady(output)` holds, and throws, with the output,
 * if the process exits first or is not ready within `timeoutMs`.
 */
const spawnUntilReady = async ({ what, args, env, timeoutMs, isReady }) => {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`The ${what} exited at start-up:\n${output}`);
    if (await isReady(output)) break;
    if (Date.now() > deadline) throw new Error(`The ${what} was not ready within ${timeoutMs / 1000} s:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, pid: child.pid, output: () => output, stop: (signal = 'SIGTERM') => stopChild(child, signal) };
};

/**
 * Starts the built server (apps/server/dist/main.js, or another entry point such as a deliberately weakened variant
 * of it) as a child process; resolves when /ready answers. The port is drawn below Linux's ephemeral range (32768 and
 * up by default), where the system's own outgoing connections take theirs, and drawn again if it is taken anyway.
 */
export const startServer = async (stack, options = {}, attempt = 1) => {
  const { nodeArgs = [], extraEnv = {}, script = `${SERVER_DIST}main.js` } = options;
  const port = 20_000 + Math.floor(Math.random() * 12_000);
  const baseUrl = `http://127.0.0.1:${port}`;
  try {
    const started = await spawnUntilReady({
      what: 'server',
      args: [...nodeArgs, script],
      env: { ...process.env, ...stack.env, HTTP_PORT: String(port), ...extraEnv },
      timeoutMs: 30_000,
      isReady: () => fetch(`${baseUrl}/ready`).then((r) => r.ok, () => false),
    });
    return { ...started, baseUrl };
  } catch (error) {
    if (error.message.includes('EADDRINUSE') && attempt < 5) return startServer(stack, options, attempt + 1);
    throw error;
  }
};

const CHECKPOINT_ROLE = { name: 'naalya_checkpoint_bench', password: 'naalya_checkpoint_bench' };
const checkpointRoleReady = new Set();

/**
 * Starts the built worker (apps/worker/dist/main.js) on the stack's queues with the scripted model; resolves when it
 * says it consumes the runs queue. The first worker of a stack runs the setup again with the worker's checkpoint role,
 * as `npm start` does. `extraEnv` overrides the rest (a fault proxy's broker URL, a shorter tool timeout...).
 */
export const startWorker = async (stack, extraEnv = {}) => {
  const checkpointUrl = databaseUrl(stack.database, CHECKPOINT_ROLE);
  if (!checkpointRoleReady.has(stack.database)) {
    runCli('db-setup.js', { ...stack.env, CHECKPOINT_DATABASE_URL: checkpointUrl });
    checkpointRoleReady.add(stack.database);
  }
  return spawnUntilReady({
    what: 'worker',
    args: [`${WORKER_DIST}main.js`],
    env: {
      ...process.env,
      RABBITMQ_URL: stack.env.RABBITMQ_URL,
      AGENT_TOOLS_QUEUE: stack.env.AGENT_TOOLS_QUEUE,
      AGENT_RUNS_QUEUE: stack.env.AGENT_RUNS_QUEUE,
      CHECKPOINT_DATABASE_URL: checkpointUrl,
      AGENT_MODEL: 'scripted',
      // 'log' prints the readiness line waited for.
      LOG_LEVEL: 'log',
      ...extraEnv,
    },
    timeoutMs: 60_000,
    isReady: (output) => output.includes('Worker ready'),
  });
};

export const stopChild = async (child, signal = 'SIGTERM') => {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
};

export const login = async (baseUrl, email) => {
  const response = await fetch(`${baseUrl}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'naalya-demo' }),
  });
  if (!response.ok) throw new Error(`login ${email}: ${response.status}`);
  return (await response.json()).accessToken;
};

export const mintContext = async (baseUrl, token, body = {}) => {
  const response = await fetch(`${baseUrl}/agent/context`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`context: ${response.status} ${await response.text()}`);
  return response.json();
};
