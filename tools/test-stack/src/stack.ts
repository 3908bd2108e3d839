import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { AgentRuntimeContext } from '@naalya/agent-tools';
import { brokerCredentialsOf, deleteTopology, generateMessageSigningKeyPair, rmqNames, type MessageSigningKeyPair } from '@naalya/rmq';
import pg from 'pg';
import { login, mintContext } from './api.js';
import { startServerProcess, startWorkerProcess, stopChild, type BuiltProcess, type ServerProcess } from './processes.js';

// The built apps, by path: the stack runs them as processes and imports nothing of them, so they are built first
// (`nx run-many -t build`), and an app's own tests may use the stack without a project cycle.
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const SERVER_MAIN = `${ROOT}apps/server/dist/main.js`;
export const WORKER_MAIN = `${ROOT}apps/worker/dist/main.js`;
const SERVER_CLI = `${ROOT}apps/server/dist/cli/`;

export const OWNER_URL = process.env['TEST_DATABASE_OWNER_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
/** The server's login in every test database: not the owner, so row-level security applies to it. */
export const APP_ROLE = { name: 'naalya_app_test', password: 'naalya_app_test' };
const CHECKPOINT_ROLE = { name: 'naalya_checkpoint_stack', password: 'naalya_checkpoint_stack' };

export const databaseUrl = (database: string, user?: { name: string; password: string }): string => {
  const url = new URL(OWNER_URL);
  url.pathname = `/${database}`;
  if (user) {
    url.username = user.name;
    url.password = user.password;
  }
  return url.toString();
};

const maintenance = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
  const client = new pg.Client({ connectionString: databaseUrl('postgres') });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
};

const dropDatabase = (database: string) => maintenance((client) => client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`));

const runServerCli = (script: string, env: Record<string, string>, args: string[] = []) => {
  const result = spawnSync(process.execPath, [`${SERVER_CLI}${script}`, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${script} failed: ${result.stderr || result.stdout}`);
};

export type TestStackOptions = {
  /** Names the database (`naalya_<name>_<suffix>`) and the queues (`agent-tools-<name>-<suffix>`), so a stray one says whose it is. */
  name: string;
  /** DATABASE_POOL_SIZE, also the tool transport's prefetch. */
  poolSize?: number;
  /** A seeded database to copy (CREATE DATABASE ... TEMPLATE) instead of setting up and seeding a new one: seconds instead of half a minute. */
  template?: string;
  /** false: the database only, no queues (a template for other stacks). */
  broker?: boolean;
  /** The server's variables over the stack's own (LOG_LEVEL, quotas...). */
  env?: Record<string, string>;
};

export type StartServerOptions = {
  /** Another entry point than the built server's main.js, such as a deliberately weakened server. */
  script?: string;
  nodeArgs?: string[];
  /** Over the stack's environment (HTTP_PORT is drawn for each start). */
  env?: Record<string, string>;
};

export type TestStack = {
  database: string;
  /** Unique to this stack: for names of anything else it creates. */
  suffix: string;
  /** The server's environment, without HTTP_PORT. */
  env: Record<string, string>;
  /** The database owner: for checking what calls did, and setting up what the seed does not. */
  owner: pg.Client;
  toolsQueue: string;
  runsQueue: string;
  /**
   * This stack's run signing pair, made for it alone: the server gets the private half (RUN_SIGNING_KEY, in `env`),
   * each worker only the public half (RUN_SIGNING_PUBLIC_KEYS). For tests that publish a run step as the server does.
   */
  runSigning: MessageSigningKeyPair;
  /** The built server as a process on a new port; it becomes `server()`. */
  startServer: (options?: StartServerOptions) => Promise<ServerProcess>;
  /** The server started last. */
  server: () => ServerProcess;
  /** The built worker as a process on the stack's queues, with the scripted model and its checkpoints in the stack's database. */
  startWorker: (env?: Record<string, string>) => Promise<BuiltProcess>;
  /** A bearer token of a seeded user, from the current server. */
  login: (email: string) => Promise<string>;
  /** A real runtime context of a seeded user, minted by the current server. */
  contextFor: (email: string, body?: Record<string, unknown>) => Promise<AgentRuntimeContext>;
  /** Kills every process it started, drops the database and deletes the queues. */
  teardown: () => Promise<void>;
};

/**
 * A database and queues of the caller's own, set up the way a user sets them up: the server's own CLIs create the
 * roles, migrate, seed and declare the broker topology. Servers and workers start on it as processes of the built apps.
 */
export const createTestStack = async (options: TestStackOptions): Promise<TestStack> => {
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const database = `naalya_${options.name}_${suffix}`;
  const toolsQueue = `agent-tools-${options.name}-${suffix}`;
  const runsQueue = `agent-runs-${options.name}-${suffix}`;
  const runSigning = generateMessageSigningKeyPair(`stack-${suffix.replaceAll('_', '-')}`);
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl(database, APP_ROLE),
    DATABASE_OWNER_URL: databaseUrl(database),
    DATABASE_POOL_SIZE: String(options.poolSize ?? 4),
    RABBITMQ_URL,
    AGENT_TOOLS_QUEUE: toolsQueue,
    AGENT_RUNS_QUEUE: runsQueue,
    JWT_SECRET: 'test-stack-secret-test-stack-secret-00',
    DISPATCH_SIGNING_KEY: 'test-stack-dispatch-key-test-stack-000',
    WORKER_BROKER_USER: decodeURIComponent(new URL(RABBITMQ_URL).username || 'guest'),
    RUN_SIGNING_KEY: runSigning.privateKey,
    SHUTDOWN_DRAIN_TIMEOUT_MS: '3000',
    // The suites and the bench log personas in many times from one address; login limits have their own suite.
    LOGIN_ATTEMPTS_PER_ACCOUNT: '10000',
    LOGIN_ATTEMPTS_PER_ADDRESS: '1000000',
    LOG_LEVEL: 'warn',
    ...options.env,
  };
  const broker = options.broker !== false;
  const owner = new pg.Client({ connectionString: env['DATABASE_OWNER_URL'] });
  try {
    if (options.template) {
      await maintenance((client) => client.query(`CREATE DATABASE "${database}" TEMPLATE "${options.template}"`));
    } else {
      runServerCli('db-setup.js', env);
      runServerCli('db-seed.js', env, ['--reset']);
    }
    if (broker) runServerCli('rmq-setup.js', env);
    await owner.connect();
  } catch (error) {
    await dropDatabase(database).catch(() => undefined);
    throw error;
  }

  const children: ChildProcess[] = [];
  const track = (child: ChildProcess) => children.push(child);
  let current: ServerProcess | undefined;
  const server = () => {
    if (!current) throw new Error('No server started: call stack.startServer() first');
    return current;
  };

  const checkpointUrl = databaseUrl(database, CHECKPOINT_ROLE);
  let checkpointRoleReady = false;
  const startWorker = async (extraEnv: Record<string, string> = {}) => {
    // The setup again with the worker's checkpoint role, as `npm start` runs it, once per database.
    if (!checkpointRoleReady) {
      runServerCli('db-setup.js', { ...env, CHECKPOINT_DATABASE_URL: checkpointUrl });
      checkpointRoleReady = true;
    }
    // Its own section of the configuration only: the broker, its queues and its checkpoints, no server secret. It runs
    // steps only from the server's broker user, signed by the key whose public half it holds.
    const workerEnv = {
      ...process.env,
      RABBITMQ_URL: env['RABBITMQ_URL'],
      // The CA of an amqps:// broker the stack was given (libs/rmq reads it for every connection).
      ...(env['RABBITMQ_CA_FILE'] ? { RABBITMQ_CA_FILE: env['RABBITMQ_CA_FILE'] } : {}),
      AGENT_TOOLS_QUEUE: toolsQueue,
      AGENT_RUNS_QUEUE: runsQueue,
      SERVER_BROKER_USER: brokerCredentialsOf(env['RABBITMQ_URL'] ?? RABBITMQ_URL).user,
      RUN_SIGNING_PUBLIC_KEYS: runSigning.publicKey,
      CHECKPOINT_DATABASE_URL: checkpointUrl,
      AGENT_MODEL: 'scripted',
      TOOL_CALL_TIMEOUT_MS: '5000',
      LOG_LEVEL: 'log',
      // Several workers may run at once: /health and /ready only for a test that gives a port.
      WORKER_HEALTH_PORT: '0',
      ...extraEnv,
    };
    return startWorkerProcess(WORKER_MAIN, workerEnv, track);
  };

  return {
    database,
    suffix,
    env,
    owner,
    toolsQueue,
    runsQueue,
    runSigning,
    startServer: async ({ script = SERVER_MAIN, nodeArgs, env: extraEnv } = {}) => {
      // The built server runs as deployed, without the owner's URL (only the setup CLIs above use it); a sabotaged server
      // (the battery's weakened-server.mjs) keeps it, since its sabotages write around the policies on purpose.
      const serverEnv: NodeJS.ProcessEnv = { ...process.env, ...env, ...extraEnv };
      if (script === SERVER_MAIN) delete serverEnv['DATABASE_OWNER_URL'];
      current = await startServerProcess({ script, nodeArgs, env: serverEnv, onSpawn: track });
      return current;
    },
    server,
    startWorker,
    login: (email) => login(server().baseUrl, email),
    contextFor: async (email, body = {}) => mintContext(server().baseUrl, await login(server().baseUrl, email), body),
    teardown: async () => {
      for (const child of children.splice(0)) await stopChild(child, 'SIGKILL');
      await owner.end().catch(() => undefined);
      await dropDatabase(database);
      if (broker) await deleteTopology(env['RABBITMQ_URL'], rmqNames(toolsQueue, runsQueue)).catch(() => undefined);
    },
  };
};
