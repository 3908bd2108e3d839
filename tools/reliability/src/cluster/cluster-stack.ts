import { join } from 'node:path';
import { runEventsIngestQueue, rmqNames } from '@naalya/rmq';
import { RmqCluster } from '@naalya/rmq/cluster';
import { createTestStack, startPgBouncer, type BuiltProcess, type ServerProcess, type TestPgBouncer, type TestStack } from '@naalya/test-stack';
import { createToolCaller, type ToolCaller } from '../support/index.js';

// The platform as a cluster would run it: three RabbitMQ nodes (quorum queues, the apps' vhost and users set up by the
// server's own rmq-setup), PgBouncer in transaction pooling in front of PostgreSQL, two servers and two workers.

const VHOST = 'naalya_cluster';
const SERVER_USER = { name: 'naalya_cluster_server', password: 'naalya-cluster-server' };
const WORKER_USER = { name: 'naalya_cluster_worker', password: 'naalya-cluster-worker' };
/** The broker's administrator in the test cluster (loopback_users = none lets guest in from 127.0.0.1). */
const ADMIN_USER = { name: 'guest', password: 'guest' };

type Credentials = { name: string; password: string };

/** One line of a process's output and when this process read it: failover times come from these. */
export type TimedLine = { at: number; line: string };

/** An app process of the cluster, with its output line by line as it arrived. */
export type ClusterApp = { label: string; process: BuiltProcess; lines: TimedLine[] };
export type ClusterServer = ClusterApp & { process: ServerProcess; alive: boolean; inFlight: number };

export type ClusterStack = {
  cluster: RmqCluster;
  /** The apps' vhost on the cluster. */
  vhost: string;
  stack: TestStack;
  pgbouncer: TestPgBouncer;
  servers: ClusterServer[];
  workers: ClusterApp[];
  /**
   * The work queues: the tools queue (calls to servers) and the run-events ingest queue, which the faults aim at, and
   * the runs queue (steps to workers).
   */
  queues: { tools: string; runs: string; runEvents: string };
  /** The worker's URL as a list of every node, or of the given nodes only (the sabotage's single-URL worker). */
  workerUrl: (nodes?: number[]) => string;
  /** Starts a worker on `nodes` (all three by default) and watches its output. */
  startWorker: (label: string, nodes?: number[]) => Promise<ClusterApp>;
  /** A caller as the worker, on every node: for get_tool_call_outcome lookups. */
  caller: ToolCaller;
  teardown: () => Promise<void>;
};

const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

/** Timestamps each line the process prints from now on (the stack keeps the text, not when it came). */
const watch = (label: string, process: BuiltProcess): ClusterApp => {
  const lines: TimedLine[] = [];
  let partial = '';
  const take = (chunk: Buffer) => {
    const text = partial + chunk.toString().replace(ANSI, '');
    const complete = text.split('\n');
    partial = complete.pop() ?? '';
    const at = Date.now();
    for (const line of complete) if (line.trim()) lines.push({ at, line });
  };
  process.child.stdout?.on('data', take);
  process.child.stderr?.on('data', take);
  return { label, process, lines };
};

/**
 * Boots the three nodes, sets up the broker on them with the server's rmq-setup (vhost, users with least privilege,
 * quorum queues), starts PgBouncer, a database of its own, two servers (DATABASE_URL through PgBouncer,
 * DATABASE_LISTEN_URL direct, RABBITMQ_URL listing the three nodes) and two workers on the three nodes.
 */
export const createClusterStack = async (): Promise<ClusterStack> => {
  // RMQ_CLUSTER_BASE comes from tools/scripts/run-cluster.mjs, which stops the nodes by their PID files whatever happens
  // here. Node names and ports of their own, so the library's failover test may run beside this one.
  const cluster = new RmqCluster({
    base: process.env['RMQ_CLUSTER_BASE'] ?? join(process.env['TMPDIR'] ?? '/tmp', `naalya-test-cluster-${process.pid}`),
    portBase: Number(process.env['RMQ_CLUSTER_PORT_BASE'] ?? 5690),
    distBase: Number(process.env['RMQ_CLUSTER_DIST_BASE'] ?? 25690),
    nodePrefix: 'tc',
  });
  const urls = (user: Credentials, nodes = [1, 2, 3]) =>
    nodes.map((node) => `${cluster.url(node, `${user.name}:${user.password}`)}/${VHOST}`).join(',');

  await cluster.up();
  const shims = join(cluster.base, 'bin');
  cluster.rabbitmqctlShim(shims);
  const pgbouncer = await startPgBouncer();
  let stack: TestStack | undefined;
  try {
    stack = await createTestStack({
      name: 'cluster',
      poolSize: 8,
      env: {
        RABBITMQ_URL: urls(SERVER_USER),
        RABBITMQ_QUEUE_TYPE: 'quorum',
        WORKER_BROKER_USER: WORKER_USER.name,
        // For rmq-setup alone: it creates the vhost and both users through `rabbitmqctl`, which the shim aims at node 1.
        RABBITMQ_ADMIN_URL: urls(ADMIN_USER),
        WORKER_RABBITMQ_URL: urls(WORKER_USER),
        PATH: `${shims}:${process.env['PATH'] ?? ''}`,
        // The faults load the servers far beyond a person's rate; quotas have their own phase in the battery.
        TOOL_CALLS_PER_MINUTE_PER_SCHOOL: '1000000000',
        TOOL_CALLS_PER_MINUTE_PER_USER: '1000000000',
        // One login drives every lane's conversations: the per-user limits are tested in the server's own suite.
        AGENT_THREADS_PER_USER: '1000000',
        AGENT_RUNS_IN_FLIGHT_PER_USER: '1000',
        // "Connected to RabbitMQ at <node> (<connection>)." is a log line: the failover times are read from it.
        LOG_LEVEL: 'info',
      },
    });
    const started = stack;
    const names = rmqNames(started.toolsQueue, started.runsQueue);
    const servers: ClusterServer[] = [];
    // B first: the stack's "current" server (logins, contexts) is the last started, and B is the one killed.
    for (const label of ['server B', 'server A']) {
      const process = await started.startServer({
        env: { DATABASE_URL: pgbouncer.appUrl(started.database), DATABASE_LISTEN_URL: started.env['DATABASE_URL'] },
      });
      servers.unshift({ ...watch(label, process), process, alive: true, inFlight: 0 });
    }
    // The worker's default tool call deadline (the test stack's is 5 s): a call a leader election interrupts is sent
    // again within it, as in production; a 5 s one can end before the new leader takes it.
    const startWorker = async (label: string, nodes?: number[]) =>
      watch(label, await started.startWorker({ RABBITMQ_URL: urls(WORKER_USER, nodes), TOOL_CALL_TIMEOUT_MS: '15000' }));
    const workers = [await startWorker('worker 1'), await startWorker('worker 2')];
    const caller = await createToolCaller({ brokerUrl: urls(WORKER_USER), toolsQueue: started.toolsQueue, timeoutMs: 5_000 });
    return {
      cluster,
      vhost: VHOST,
      stack: started,
      pgbouncer,
      servers,
      workers,
      queues: { tools: names.toolsQueue, runs: names.runsQueue, runEvents: runEventsIngestQueue(names) },
      workerUrl: (nodes) => urls(WORKER_USER, nodes),
      startWorker,
      caller,
      teardown: async () => {
        await caller.close().catch(() => undefined);
        await started.teardown().catch(() => undefined);
        await pgbouncer.stop();
        await cluster.down();
      },
    };
  } catch (error) {
    await stack?.teardown().catch(() => undefined);
    await pgbouncer.stop();
    await cluster.down().catch(() => undefined);
    throw error;
  }
};
