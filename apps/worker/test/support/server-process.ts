import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

const SERVER_DIST = fileURLToPath(new URL('../../../server/dist/', import.meta.url));
const OWNER_URL = process.env['TEST_DATABASE_OWNER_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';

const databaseUrl = (database: string, user?: { name: string; password: string }) => {
  const url = new URL(OWNER_URL);
  url.pathname = `/${database}`;
  if (user) {
    url.username = user.name;
    url.password = user.password;
  }
  return url.toString();
};

export type ServerStack = {
  env: Record<string, string>;
  toolsQueue: string;
  baseUrl: string;
  /** The owner's view of the run's database, for checking what calls did. */
  owner: pg.Client;
  start: () => Promise<void>;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
  login: (email: string) => Promise<string>;
  mintContext: (token: string, body?: Record<string, unknown>) => Promise<unknown>;
  teardown: () => Promise<void>;
};

const runCli = (script: string, env: Record<string, string>, args: string[] = []) => {
  const result = spawnSync(process.execPath, [`${SERVER_DIST}cli/${script}`, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${script} failed: ${result.stderr || result.stdout}`);
};

/**
 * The built server as a separate process, on a database and queues of its own, set up the way a user
 * sets it up: the server's own CLIs create the roles, migrate, seed and declare the broker topology.
 */
export const createServerStack = async (): Promise<ServerStack> => {
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const database = `naalya_e2e_${suffix}`;
  // Below Linux's ephemeral range (32768 and up), where outgoing connections take their ports: a restart on this port
  // after a kill could otherwise find it taken.
  const port = 20_000 + Math.floor(Math.random() * 12_000);
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl(database, { name: 'naalya_app_test', password: 'naalya_app_test' }),
    DATABASE_OWNER_URL: databaseUrl(database),
    DATABASE_POOL_SIZE: '4',
    RABBITMQ_URL,
    AGENT_TOOLS_QUEUE: `agent-tools-e2e-${suffix}`,
    AGENT_RUNS_QUEUE: `agent-runs-e2e-${suffix}`,
    JWT_SECRET: 'e2e-secret-e2e-secret-e2e-secret-0000',
    DISPATCH_SIGNING_KEY: 'e2e-dispatch-key-e2e-dispatch-key-0000',
    WORKER_BROKER_USER: new URL(RABBITMQ_URL).username || 'guest',
    HTTP_PORT: String(port),
    SHUTDOWN_DRAIN_TIMEOUT_MS: '3000',
    LOG_LEVEL: 'warn',
  };
  runCli('db-setup.js', env);
  runCli('db-seed.js', env, ['--reset']);
  runCli('rmq-setup.js', env);
  const owner = new pg.Client({ connectionString: env['DATABASE_OWNER_URL'] });
  await owner.connect();

  let child: ChildProcess | undefined;
  let output = '';
  const baseUrl = `http://127.0.0.1:${port}`;

  const start = async () => {
    output = '';
    child = spawn(process.execPath, [`${SERVER_DIST}main.js`], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`The server exited at start-up:\n${output}`);
      const ready = await fetch(`${baseUrl}/ready`).then((response) => response.ok, () => false);
      if (ready) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`The server was not ready within 20 s:\n${output}`);
  };

  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    const running = child;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    await exited;
  };

  const login = async (email: string) => {
    const response = await fetch(`${baseUrl}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'naalya-demo' }),
    });
    if (!response.ok) throw new Error(`login ${email}: ${response.status}`);
    return ((await response.json()) as { accessToken: string }).accessToken;
  };

  const mintContext = async (token: string, body: Record<string, unknown> = {}) => {
    const response = await fetch(`${baseUrl}/agent/context`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`context: ${response.status} ${await response.text()}`);
    return response.json();
  };

  const teardown = async () => {
    await stop('SIGKILL');
    await owner.end();
    const maintenance = new pg.Client({ connectionString: databaseUrl('postgres') });
    await maintenance.connect();
    await maintenance.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await maintenance.end();
  };

  return { env, toolsQueue: env['AGENT_TOOLS_QUEUE'], baseUrl, owner, start, stop, login, mintContext, teardown };
};
