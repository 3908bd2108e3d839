import type { ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AgentRuntimeContext } from '@naalya/agent-tools';
import { deleteTopology, rmqNames } from '@naalya/rmq';
import pg from 'pg';
import { inject } from 'vitest';
// bench/ is not an Nx project but a folder of scripts: its stack (the server's own setup CLIs, the server as a process)
// is shared with it by file rather than copied here.
// eslint-disable-next-line @nx/enforce-module-boundaries
import { OWNER_URL, RABBITMQ_URL, createStack, login, mintContext, startServer, startWorker as startBenchWorker, stopChild } from '../../../../bench/lib/stack.mjs';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const SERVER_DIST = `${ROOT}apps/server/dist/`;
const WORKER_DIST = `${ROOT}apps/worker/dist/`;

/**
 * A module of the built server or worker, loaded at run time: the battery tests the artifacts it runs as processes,
 * and apps are not libraries other projects may import from source.
 */
export const fromServerDist = <T>(path: string): Promise<T> => import(pathToFileURL(`${SERVER_DIST}${path}`).href) as Promise<T>;
export const fromWorkerDist = <T>(path: string): Promise<T> => import(pathToFileURL(`${WORKER_DIST}${path}`).href) as Promise<T>;

export type ServerProcess = {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  stop: (signal?: NodeJS.Signals) => Promise<void>;
};

export type WorkerProcess = { child: ChildProcess; output: () => string; stop: (signal?: NodeJS.Signals) => Promise<void> };

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
  startWorker: (extraEnv?: Record<string, string>) => Promise<WorkerProcess>;
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
  | 'no-quota';
const WEAKENED_SERVER = fileURLToPath(new URL('./weakened-server.mjs', import.meta.url));

/**
 * Its own database and queues, set up by the server's own CLIs (bench/lib/stack.mjs), and the server and worker as
 * processes of the built dist pointed at the fault proxies. Teardown drops the database and deletes the queues.
 */
export const createReliabilityStack = async (options: { poolSize?: number; serverEnv?: Record<string, string> } = {}): Promise<ReliabilityStack> => {
  const base = await createStack({ poolSize: options.poolSize ?? 8, template: inject('templateDatabase'), prefix: 'naalya_rel' });
  const ownerUrl = new URL(OWNER_URL);
  const brokerUrl = new URL(base.env.RABBITMQ_URL);
  const broker = await startFaultProxy({ host: brokerUrl.hostname, port: Number(brokerUrl.port || 5672) });
  const database = await startFaultProxy({ host: ownerUrl.hostname, port: Number(ownerUrl.port || 5432) }, { postgres: true });

  const env: Record<string, string> = {
    ...base.env,
    DATABASE_URL: database.rewrite(base.env.DATABASE_URL),
    RABBITMQ_URL: broker.rewrite(base.env.RABBITMQ_URL),
    // Quotas are a flood brake with their own phase; fault phases load the server far beyond a person's rate.
    ...options.serverEnv,
  };
  const workerBrokerUrl = broker.rewrite(process.env['RABBITMQ_WORKER_TEST_URL'] ?? RABBITMQ_URL);
  let current: ServerProcess | undefined;
  const workers: WorkerProcess[] = [];
  const servers: ServerProcess[] = [];

  const startServerProcess = async (start: { weakening?: Weakening; extraEnv?: Record<string, string> } = {}) => {
    const started = await startServer(
      { env },
      start.weakening
        ? { script: WEAKENED_SERVER, extraEnv: { ...start.extraEnv, RELIABILITY_WEAKENING: start.weakening } }
        : { extraEnv: start.extraEnv ?? {} },
    );
    const server: ServerProcess = { child: started.child, baseUrl: started.baseUrl, output: started.output, stop: (signal) => stopChild(started.child, signal) };
    servers.push(server);
    current = server;
    return server;
  };

  const startWorker = async (extraEnv: Record<string, string> = {}) => {
    const started = await startBenchWorker(base, { RABBITMQ_URL: workerBrokerUrl, TOOL_CALL_TIMEOUT_MS: '5000', ...extraEnv });
    const worker: WorkerProcess = { child: started.child, output: started.output, stop: started.stop };
    workers.push(worker);
    return worker;
  };

  const server = () => {
    if (!current) throw new Error('No server started: call stack.startServer() first');
    return current;
  };

  return {
    env,
    owner: base.owner,
    broker,
    database,
    workerBrokerUrl,
    toolsQueue: base.toolsQueue,
    server,
    startServer: startServerProcess,
    startWorker,
    login: (email) => login(server().baseUrl, email),
    contextFor: async (email, body = {}) => (await mintContext(server().baseUrl, await login(server().baseUrl, email), body)) as AgentRuntimeContext,
    teardown: async () => {
      for (const process of [...workers, ...servers]) await process.stop('SIGKILL');
      await broker.close();
      await database.close();
      await base.teardown();
      await deleteTopology(base.env.RABBITMQ_URL, rmqNames(env['AGENT_TOOLS_QUEUE'], env['AGENT_RUNS_QUEUE'])).catch(() => undefined);
    },
  };
};

