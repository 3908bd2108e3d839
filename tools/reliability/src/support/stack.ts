import { fileURLToPath } from 'node:url';
import type { AgentRuntimeContext } from '@naalya/agent-tools';
import { OWNER_URL, RABBITMQ_URL, createTestStack, type BuiltProcess, type ServerProcess } from '@naalya/test-stack';
import type pg from 'pg';
import { inject } from 'vitest';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';

export type { ServerProcess };
export type WorkerProcess = BuiltProcess;

export type ReliabilityStack = {
  /** The server's environment, with the broker and database reached through the fault proxies. */
  env: Record<string, string>;
  /** The database owner, straight to PostgreSQL (never through a proxy): the reconciler's view. */
  owner: pg.Client;
  /** Fault proxies in front of the shared broker and database; the server and the worker connect only through them. */
  broker: FaultProxy;
  database: FaultProxy;
  /** The worker's broker URL, through the proxy: callers publish as the worker does. */
  workerBrokerUrl: string;
  toolsQueue: string;
  /** The current server process (replaced by startServer). */
  server: () => ServerProcess;
  /** The built server, or with `weakening` the same server with one protection switched off (weakened-server.mjs). */
  startServer: (options?: { weakening?: Weakening; extraEnv?: Record<string, string> }) => Promise<ServerProcess>;
  /**
   * The built worker, through the broker proxy. With `preload`, the same worker with a fault or a weakening loaded
   * before its entry point (worker-preload.mjs, by NODE_OPTIONS=--import): production code has no switch for any of it.
   */
  startWorker: (extraEnv?: Record<string, string>, options?: { preload?: WorkerPreload }) => Promise<WorkerProcess>;
  /** A bearer token of the persona, from the current server's /auth/login. */
  login: (email: string) => Promise<string>;
  /** A real runtime context: the persona logs in and the server opens a run and mints the dispatch token. */
  contextFor: (email: string, body?: Record<string, unknown>) => Promise<AgentRuntimeContext>;
  teardown: () => Promise<void>;
};

/** The protections weakened-server.mjs can switch off, one per sabotage test. */
export type Weakening =
  | 'no-ledger'
  | 'audit-outside-transaction'
  | 'ack-on-delivery'
  | 'any-publisher'
  | 'rls-bypassed'
  | 'lenient-schemas'
  | 'auto-approve'
  | 'no-quota'
  | 'no-sweeper'
  | 'unbounded-attempts'
  | 'no-fencing'
  | 'unlocked-run-check'
  | 'no-thread-lock';

/**
 * What worker-preload.mjs loads into a worker process: a fault the phase injects (a step that kills its worker; a
 * worker whose writes outrun its own lease check, as a freeze landing between the two would make them) or a protection
 * switched off for a sabotage test (run steps not authenticated).
 */
export type WorkerPreload = 'poison-step' | 'late-talker' | 'unauthenticated-steps';
const WORKER_PRELOAD = new URL('./worker-preload.mjs', import.meta.url).href;
const WEAKENED_SERVER = fileURLToPath(new URL('./weakened-server.mjs', import.meta.url));

// Quotas are a flood brake with their own phase; fault phases load the server far beyond a person's rate.
const RELIABILITY_SERVER_ENV: Record<string, string> = {
  TOOL_CALLS_PER_MINUTE_PER_SCHOOL: '1000000000',
  TOOL_CALLS_PER_MINUTE_PER_USER: '1000000000',
  // One login drives many conversations at once here: the per-user limits are tested in the server's own suite.
  AGENT_THREADS_PER_USER: '1000000',
  AGENT_RUNS_IN_FLIGHT_PER_USER: '1000',
  AGENT_EVENT_STREAMS_PER_USER: '1000',
  LOG_LEVEL: 'error',
};

/**
 * A test stack (@naalya/test-stack) copied from the run's seeded template, with the server and worker pointed at fault
 * proxies in front of the shared broker and database. Teardown drops the database and deletes the queues.
 */
export const createReliabilityStack = async (options: { poolSize?: number; serverEnv?: Record<string, string> } = {}): Promise<ReliabilityStack> => {
  const base = await createTestStack({
    name: 'rel',
    poolSize: options.poolSize ?? 8,
    template: inject('templateDatabase'),
    env: { ...RELIABILITY_SERVER_ENV, ...options.serverEnv },
  });
  const ownerUrl = new URL(OWNER_URL);
  const brokerUrl = new URL(base.env['RABBITMQ_URL']);
  const broker = await startFaultProxy({ host: brokerUrl.hostname, port: Number(brokerUrl.port || 5672) });
  const database = await startFaultProxy({ host: ownerUrl.hostname, port: Number(ownerUrl.port || 5432) }, { postgres: true });

  const env: Record<string, string> = {
    ...base.env,
    DATABASE_URL: database.rewrite(base.env['DATABASE_URL']),
    RABBITMQ_URL: broker.rewrite(base.env['RABBITMQ_URL']),
  };
  const workerBrokerUrl = broker.rewrite(process.env['RABBITMQ_WORKER_TEST_URL'] ?? RABBITMQ_URL);

  return {
    env,
    owner: base.owner,
    broker,
    database,
    workerBrokerUrl,
    toolsQueue: base.toolsQueue,
    server: base.server,
    startServer: (start = {}) =>
      base.startServer(
        start.weakening
          ? { script: WEAKENED_SERVER, env: { ...env, ...start.extraEnv, RELIABILITY_WEAKENING: start.weakening } }
          : { env: { ...env, ...start.extraEnv } },
      ),
    startWorker: (extraEnv = {}, start = {}) =>
      base.startWorker({
        RABBITMQ_URL: workerBrokerUrl,
        ...(start.preload
          ? { NODE_OPTIONS: `${process.env['NODE_OPTIONS'] ?? ''} --import=${WORKER_PRELOAD}`.trim(), RELIABILITY_WORKER_PRELOAD: start.preload }
          : {}),
        ...extraEnv,
      }),
    login: base.login,
    contextFor: base.contextFor,
    teardown: async () => {
      try {
        await base.teardown();
      } finally {
        await broker.close();
        await database.close();
      }
    },
  };
};
