#!/usr/bin/env node
// `npm run bench`: one tool-call hop, five ways, over the real RabbitMQ and PostgreSQL, in one process tree and one run.
// This process is the caller of every variant; each variant's server is a child process. See bench/README.md.
//
//   node bench/run.mjs               full run: 3 interleaved rounds × c1/c16/c64/c256, then the scale-out check
//   node bench/run.mjs --smoke       ~10 s of measurement, 1 round, no scale-out (CI: fails on errors only)
//   node bench/run.mjs --soak        60 s at c64 (reads and audited writes), server RSS growth
//   node bench/run.mjs --profile --label=before   CPU profile of the server at c64, self time by package
//   node bench/run.mjs --scale-out   only the scale-out check
//   node bench/run.mjs --stream      only the streaming measurement (tokens to SSE clients, ours against a baseline)
//   node bench/run.mjs --cluster     (a) (b) (c) (d) (e) on the single node and on a 3-node quorum cluster + PgBouncer
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Logger } from '@nestjs/common';
import { createDepartmentTool, identityFromUserDetails, listDepartmentsTool } from '@naalya/agent-tools';
import { brokerCredentialsOf, declareTopology, deleteTopology, rmqNames, runEventsIngestQueue } from '@naalya/rmq';
import { RmqCluster } from '@naalya/rmq/cluster';
import amqplib from 'amqplib';
import { APP_ROLE, RABBITMQ_URL, converse, createTestStack, login, startPgBouncer } from '@naalya/test-stack';
import { AgentToolService, callScopeFromContext, toRpcProxy, toolCallIdempotencyKey } from '@naalya/worker/testing';
import { forkServer } from './lib/fork-server.mjs';
import { foreignShare, machineBusy, noiseVerdict } from './lib/noise.mjs';
import { brokerPid, cpuMicros, rssBytes, selfCpuMicros } from './lib/proc.mjs';
import { createRawClient } from './lib/raw-client.mjs';
import { CLUSTER_PAIRS, CLUSTER_VARIANTS, VARIANTS, aggregate, clusterMarkdown, markdown, ratios, svgChart, targets } from './lib/report.mjs';
import { profileMarkdown, summariseProfile } from './lib/profile-summary.mjs';
import { startOtlpSink } from './lib/otlp-sink.mjs';
import { logOffset, readStatements, setStatementLogging } from './lib/statement-log.mjs';
import { directRuns, measureStreaming, startEventPublisher, streamMarkdown } from './lib/stream.mjs';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const option = (name, fallback) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const SMOKE = flag('smoke');
// --tracing: the servers trace every call and export to an OTLP receiver in this process (lib/otlp-sink.mjs), to
// measure what tracing costs; without it OTEL_EXPORTER_OTLP_ENDPOINT is unset and the servers start no tracing.
const TRACING = flag('tracing');
const CLUSTER = flag('cluster');
const MODE = flag('soak')
  ? 'soak'
  : flag('profile')
    ? 'profile'
    : flag('scale-out')
      ? 'scale-out'
      : flag('stream')
        ? 'stream'
        : CLUSTER
          ? 'cluster'
          : SMOKE
            ? 'smoke'
            : 'full';
const ROUNDS = Number(option('rounds', SMOKE ? 1 : 3));
const PHASE_MS = Number(option('phase-ms', SMOKE ? 250 : 2500));
const WARM_MS = SMOKE ? 150 : 1500;
const SLICES = Number(option('slices', SMOKE ? 1 : 10));
// The cluster run doubles every phase (each variant on both settings): c1 and c64 keep it within 6 minutes on 2 cores.
const CONCURRENCIES = option('concurrency', CLUSTER ? '1,64' : '1,16,64,256').split(',').map(Number);
const POOL_SIZE = Number(option('pool', 8)); // .env.example's DATABASE_POOL_SIZE; the transport's prefetch equals it
const PREFETCH = POOL_SIZE;
// The run-events ingest's prefetch (the server's RUN_EVENTS_PREFETCH, set here so that the streaming baseline's consumer
// holds as many messages as the ingest does).
const RUN_EVENTS_PREFETCH = 256;
const TIMEOUT_MS = 15_000;
const BENCH = fileURLToPath(new URL('./', import.meta.url));
const RESULTS = `${BENCH}results/`;
// --variants=a,b runs only those (e.g. to profile one of them); ratios and targets need both of their variants.
const VARIANT_ORDER = option('variants', CLUSTER ? 'a,b,c,d,er,ew' : 'a0,a,b,bt,c,cm,d,dm,er,ew,er7,ew10').split(',');
// (e7) and (e10): the ideal pipeline issuing the statements the server issued before issue 25 (7 per read, 10 per write).
const PREVIOUS_IDEAL_VARIANTS = ['er7', 'ew10'];
// (c mem) and (d mem): the same built server with TOOL_CALL_QUOTA_STORE=memory, on queues of its own.
const MEMORY_QUOTA_VARIANTS = ['cm', 'dm'];
// The cluster run's second setting repeats (a) to (e), keyed `q<variant>` (report.mjs's CLUSTER_VARIANTS).
const onCluster = (variant) => variant.startsWith('q');
// Writes leave departments behind (see clearWrittenDepartments).
const WRITE_VARIANTS = new Set(['d', 'dm', 'ew', 'ew10', 'qd', 'qew']);
// The cluster's own ports, Erlang distribution ports and node names: beside `npm run test:cluster` (5691-5693, tc*) and
// the failover spec (5681-5683, r*), so either may run at the same time as this.
const BENCH_CLUSTER = { portBase: 5700, distBase: 25700, nodePrefix: 'bc' };
/** The node (1-3) on which the bench declares the cluster's queues: quorum queues are led by the declaring node. */
const LEADER_NODE = 1;

Logger.overrideLogger(['error', 'warn']);
const log = (line) => console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const percentile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);

/**
 * The cluster setting's infrastructure: three RabbitMQ nodes of the bench's own (RmqCluster, in a directory of its own
 * under the OS tmpdir) and PgBouncer in transaction pooling with as many server connections as the database pool.
 * stop() kills the nodes by the PIDs their script recorded (nothing on them is worth a graceful stop), lets the script
 * stop what is left of them the same way, removes the directory, and stops PgBouncer.
 */
const startClusterInfrastructure = async () => {
  const cluster = new RmqCluster({ base: join(tmpdir(), `naalya-bench-cluster-${process.pid}`), ...BENCH_CLUSTER });
  let pgbouncer;
  const stop = async () => {
    await pgbouncer?.stop().catch(() => undefined);
    for (const node of [1, 2, 3]) await cluster.kill(node).catch(() => undefined);
    await cluster.down().catch(() => undefined);
    rmSync(cluster.base, { recursive: true, force: true });
  };
  try {
    const t0 = performance.now();
    await cluster.up();
    log(`cluster: 3 nodes up in ${((performance.now() - t0) / 1000).toFixed(0)} s, AMQP on ${cluster.portBase + 1}-${cluster.portBase + 3}`);
    pgbouncer = await startPgBouncer({ poolSize: POOL_SIZE });
    return { cluster, pgbouncer, stop };
  } catch (error) {
    await stop();
    throw error;
  }
};

/**
 * Everything the run starts, for its one teardown: at the end, on an error, and on SIGINT or SIGTERM. Set-ups still
 * under way (the stack, the cluster's boot) are waited for, so that what they start is stopped too.
 */
const started = { stack: undefined, infrastructure: undefined, sink: undefined, children: [], closers: [], queues: {} };
let stopping;
const teardown = () =>
  (stopping ??= (async () => {
    for (const close of started.closers.splice(0).reverse()) await close().catch(() => undefined);
    for (const child of started.children.splice(0)) await child.stop('SIGKILL').catch(() => undefined);
    for (const names of Object.values(started.queues)) await deleteTopology(RABBITMQ_URL, names).catch(() => undefined);
    const stack = await started.stack?.catch(() => undefined);
    if (stack) {
      await setStatementLogging(stack.owner, APP_ROLE.name, stack.database, false).catch(() => undefined);
      await stack.teardown().catch(() => undefined);
    }
    const infrastructure = await started.infrastructure?.catch(() => undefined);
    await infrastructure?.stop();
  })());
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    log(`${signal}: stopping what the bench started`);
    teardown().finally(() => process.exit(1));
  });
}

const main = async () => {
  const startedAt = new Date().toISOString();
  // Before the bench's own set-up loads the machine: what else was running when it started (lib/noise.mjs).
  const loadBefore = loadavg().map((l) => l.toFixed(2)).join(' ');
  log(`mode ${MODE}; setting up a database and queues of the bench's own (load ${loadBefore})`);
  // The cluster boots (~25 s) while the stack sets up its database: set-up both, timed neither.
  if (CLUSTER) {
    started.infrastructure = startClusterInfrastructure();
    // Handled where it is awaited, after the stack; a failed boot meanwhile is not an unhandled rejection.
    started.infrastructure.catch(() => undefined);
  }
  const sink = TRACING ? await startOtlpSink() : undefined;
  if (sink) {
    started.closers.push(() => sink.close());
    started.sink = sink;
  }
  started.stack = createTestStack({
    name: 'bench',
    poolSize: POOL_SIZE,
    // One user at thousands of calls a second is a load test, not a person: the per-minute quotas still run on every
    // call (counted in PostgreSQL: a block of 32 calls reserved per statement from one school's and one user's counter
    // row, the busiest case), with limits the bench never reaches.
    env: {
      TOOL_CALLS_PER_MINUTE_PER_SCHOOL: '1000000000',
      TOOL_CALLS_PER_MINUTE_PER_USER: '1000000000',
      // The streaming phases hold up to 64 streams over two logins, past a person's AGENT_EVENT_STREAMS_PER_USER.
      AGENT_EVENT_STREAMS_PER_USER: '1000',
      RUN_EVENTS_PREFETCH: String(RUN_EVENTS_PREFETCH),
      LOG_LEVEL: 'error',
      ...(sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {}),
    },
  });
  try {
    const stack = await started.stack;
    const infrastructure = await started.infrastructure;
    const queues = await queuesFor(stack.suffix);
    return await runMode({ stack, infrastructure, queues, children: started.children, closers: started.closers, startedAt, loadBefore });
  } finally {
    await teardown();
  }
};

/** The bench's own queues on the machine's node, declared now and deleted by the teardown. */
const queuesFor = async (suffix) => {
  const queues = {
    a: rmqNames(`bench-a-${suffix}`, `bench-a-runs-${suffix}`),
    b: rmqNames(`bench-b-${suffix}`, `bench-b-runs-${suffix}`),
    e: rmqNames(`bench-e-${suffix}`, `bench-e-runs-${suffix}`),
    // The previous 7- and 10-statement ideal (variants er7, ew10).
    p: rmqNames(`bench-p-${suffix}`, `bench-p-runs-${suffix}`),
    // The server that counts quotas in memory (variants cm, dm): its own tools and runs queues.
    m: rmqNames(`bench-m-${suffix}`, `bench-m-runs-${suffix}`),
    // The streaming baseline's run events exchange and ingest queue: declared exactly as the server's are.
    s: rmqNames(`bench-s-${suffix}`, `bench-s-runs-${suffix}`),
  };
  Object.assign(started.queues, queues);
  for (const names of Object.values(queues)) await declareTopology(RABBITMQ_URL, names);
  return queues;
};

const runMode = async ({ stack, infrastructure, queues, children, closers, startedAt, loadBefore }) => {
  const profileIdeal = MODE === 'profile' && option('profile-target', 'server') === 'ideal';
  // The ideal follows the statements captured from the server, so a profile of it needs the capture too.
  const capture = MODE === 'full' || MODE === 'smoke' || MODE === 'cluster' || profileIdeal;
  // Statement capture first: sessions opened from now on log every statement; servers are restarted after it.
  if (capture) await setStatementLogging(stack.owner, APP_ROLE.name, stack.database, true);

  mkdirSync(RESULTS, { recursive: true });
  const heapFile = `${RESULTS}soak-heap.jsonl`;
  if (MODE === 'soak') rmSync(heapFile, { force: true });
  // --profile profiles the server, or with --profile-target=ideal the ideal pipeline under the same load: the gap between
  // the two profiles is what execute() costs over the statements themselves.
  const profiled = { nodeArgs: ['--import', `${BENCH}lib/cpu-profile-preload.mjs`], env: { BENCH_CPU_PROFILE_FILE: profilePath() } };
  const serverArgs =
    MODE === 'profile' && !profileIdeal
      ? profiled
      : MODE === 'soak' && flag('heap')
        ? { nodeArgs: ['--expose-gc', '--import', `${BENCH}lib/heap-preload.mjs`], env: { BENCH_HEAP_FILE: heapFile } }
        : {};
  let server = await stack.startServer(serverArgs);
  children.push(server);
  const ctx = {};
  const mint = async () => {
    ctx.read = await stack.contextFor('admin@greenhill.school');
    ctx.write = await stack.contextFor('admin@lakeside.school');
  };
  await mint();

  const baseEnv = { RABBITMQ_URL, BENCH_PREFETCH: String(PREFETCH) };
  const idealEnv = {
    ...baseEnv,
    BENCH_QUEUE: queues.e.toolsQueue,
    DATABASE_URL: stack.env.DATABASE_URL,
    DATABASE_POOL_SIZE: String(POOL_SIZE),
    BENCH_DISPATCH_KEY: stack.env.DISPATCH_SIGNING_KEY,
    BENCH_IDEAL_DISPATCH_STATE: '0',
    BENCH_IDEAL_IDENTITY_WITH_PERMISSIONS: '0',
    BENCH_IDEAL_FUSED: '0',
  };
  let ideal;
  // The profiler's preload only starts on SIGUSR2, so every ideal of a profile run may carry it.
  const startIdeal = () =>
    profileIdeal ? forkServer('ideal.mjs', { ...idealEnv, ...profiled.env }, profiled.nodeArgs) : forkServer('ideal.mjs', idealEnv);

  // Where one setting's processes connect. `list` is what the project's processes are given (RABBITMQ_URL: one node, or
  // every node of the cluster); the bench's own servers consume on node `serverNode` of it (0-based), where the
  // project's server is, and every caller calls from node `callerNode`: the worker's client through the list with that
  // first node, the raw clients on that node alone. So each ratio's two variants take the same way through the broker.
  const SINGLE = { list: RABBITMQ_URL, node: () => RABBITMQ_URL, serverNode: 0, callerNode: 0 };
  const newToolService = async (queue, broker = SINGLE) => {
    const service = new AgentToolService({ rabbitmqUrl: broker.list, toolsQueue: queue, timeoutMs: TIMEOUT_MS, firstNode: broker.callerNode });
    await service.onModuleInit();
    closers.push(() => service.onModuleDestroy());
    return service;
  };

  let sequence = 0;
  const unique = () => `${process.pid}-${++sequence}`;
  const invoke = async (proxy, args, context) => {
    const output = String(await proxy.invoke(args, { context, toolCallId: `bench-${randomUUID()}`, writer: null, configurable: { thread_id: 'bench' } }));
    if (output.startsWith('{"error"')) throw new Error(output.slice(0, 300));
    return output;
  };
  const envelope = (context, args) => ({
    identity: identityFromUserDetails(context.userDetails),
    scope: callScopeFromContext(context),
    args,
    meta: {
      callId: toolCallIdempotencyKey('bench', `bench-${randomUUID()}`),
      deadline: Date.now() + TIMEOUT_MS,
      ...(context.dispatchToken ? { dispatchToken: context.dispatchToken } : {}),
    },
  });
  const rawCall = async (client, pattern, data) => {
    const response = await client.call(pattern, data);
    if (response && typeof response === 'object' && 'error' in response) throw new Error(String(response.error).slice(0, 300));
    return response;
  };
  /** (c), (d) and (e) of one setting: the worker's client to the server's queue, a raw client to the ideal's. */
  const toolCallers = async (broker, toolsQueue, idealQueue) => {
    const serverCaller = await newToolService(toolsQueue, broker);
    const readProxy = toRpcProxy(listDepartmentsTool, serverCaller);
    const writeProxy = toRpcProxy(createDepartmentTool, serverCaller);
    const rawE = await createRawClient({ url: broker.node(broker.callerNode), queue: idealQueue, timeoutMs: TIMEOUT_MS });
    closers.push(rawE.close);
    return {
      c: () => invoke(readProxy, {}, ctx.read),
      d: () => invoke(writeProxy, { name: `Bench d ${unique()}` }, ctx.write),
      er: () => rawCall(rawE, 'list.departments', envelope(ctx.read, {})),
      ew: () => rawCall(rawE, 'create.department', envelope(ctx.write, { name: `Bench e ${unique()}` })),
    };
  };
  /** (a) and (b) of one setting: the raw echo and the project's transport as servers, a raw client and the worker's as callers. */
  const echoVariants = async (broker, names) => {
    const env = { RABBITMQ_URL: broker.node(broker.serverNode), BENCH_PREFETCH: String(PREFETCH) };
    const rawEcho = await forkServer('raw-echo.mjs', { ...env, BENCH_QUEUE: names.a.toolsQueue });
    children.push(rawEcho);
    const nestEcho = await forkServer('nest-echo.mjs', {
      ...env,
      RABBITMQ_URL: broker.list,
      BENCH_FIRST_NODE: String(broker.serverNode),
      BENCH_QUEUE: names.b.toolsQueue,
      BENCH_DLX: names.b.deadLetterExchange,
      BENCH_EVENT: listDepartmentsTool.event,
    });
    children.push(nestEcho);
    const rawA = await createRawClient({ url: broker.node(broker.callerNode), queue: names.a.toolsQueue, timeoutMs: TIMEOUT_MS });
    closers.push(rawA.close);
    const echoProxy = toRpcProxy(listDepartmentsTool, await newToolService(names.b.toolsQueue, broker));
    return {
      rawEcho,
      nestEcho,
      callers: { a: () => rawCall(rawA, 'list.departments', envelope(ctx.read, {})), b: () => invoke(echoProxy, {}, ctx.read) },
    };
  };
  const callers = await toolCallers(SINGLE, stack.toolsQueue, queues.e.toolsQueue);

  // ---- statements per call, from PostgreSQL's statement log -------------------------------------------------------
  const statements = {};
  const statementLists = {};
  if (capture) {
    const perVariant = SMOKE ? 5 : 20;
    for (const variant of ['c', 'd', 'er', 'ew']) {
      if (variant === 'er') {
        // The ideal issues the run-in-flight check only if the server does (it came with signed dispatch tokens).
        idealEnv.BENCH_IDEAL_DISPATCH_STATE = statementLists.c.some((sql) => sql.includes('agent_run_dispatch_state')) ? '1' : '0';
        // And reads the caller with their permissions in one statement only if the server does.
        idealEnv.BENCH_IDEAL_IDENTITY_WITH_PERMISSIONS = statementLists.c.some((sql) => sql.includes('AS permissions FROM users u')) ? '1' : '0';
        // And the fused statements (open_tool_call and the rest: 4 per read, 6 per write) if the server issues them.
        idealEnv.BENCH_IDEAL_FUSED = statementLists.c.some((sql) => sql.includes('open_tool_call(')) ? '1' : '0';
        ideal = await startIdeal();
        children.push(ideal);
      }
      await callers[variant]();
      await sleep(50);
      const start = logOffset();
      for (let i = 0; i < perVariant; i++) await callers[variant]();
      const lastStart = logOffset();
      await callers[variant]();
      await sleep(300);
      const all = readStatements(start, APP_ROLE.name, stack.database);
      const last = readStatements(lastStart, APP_ROLE.name, stack.database);
      statements[variant] = (all.length - last.length) / perVariant;
      statementLists[variant] = last.map((s) => s.sql);
    }
    const normalise = (list) => list.map((sql) => sql.replace(/IN \(\$\d+(, \$\d+)*\)/g, 'IN (…)'));
    const same = (x, y) => JSON.stringify(normalise(statementLists[x])) === JSON.stringify(normalise(statementLists[y]));
    statements.match = { read: same('c', 'er'), write: same('d', 'ew') };
    log(`statements per call: (c) ${statements.c} (e read) ${statements.er} · (d) ${statements.d} (e write) ${statements.ew} · ideal issues the same statements: read ${statements.match.read}, write ${statements.match.write}`);
    await setStatementLogging(stack.owner, APP_ROLE.name, stack.database, false);
  }
  if (capture && !SMOKE) {
    // Fresh sessions without statement logging for the timed phases (the smoke run keeps its sessions: it judges no number).
    await server.stop();
    server = await stack.startServer();
    children.push(server);
    await mint();
    await ideal.stop();
    ideal = await startIdeal();
    children.push(ideal);
  }

  ideal ??= await startIdeal();
  if (!children.includes(ideal)) children.push(ideal);
  if (MODE === 'profile') return profileMode(profileIdeal ? { server: ideal, callers: { c: callers.er, d: callers.ew } } : { server, callers });
  if (MODE === 'soak') return soakMode({ server, callers });
  if (MODE === 'scale-out') return scaleOut({ stack, server });
  if (MODE === 'stream') {
    const stream = await streaming({ stack, server, queues, children, closers });
    writeFileSync(`${RESULTS}stream.json`, `${JSON.stringify(stream, null, 2)}\n`);
    writeFileSync(`${RESULTS}stream.md`, `# Streaming benchmark\n\n${stream.table}\n`);
    console.log(`\n${stream.table}\n`);
    return stream.problems;
  }

  // ---- the other variants' servers and callers ------------------------------------------------------------------
  const { rawEcho, nestEcho, callers: echoCallers } = await echoVariants(SINGLE, queues);
  Object.assign(callers, echoCallers);
  // (a₀): the same echo reached through the default exchange, as the worker published before it lost write access to
  // amq.default; (a)/(a₀) is what the broker charges for the tools exchange and mandatory routing.
  const rawA0 = await createRawClient({ url: RABBITMQ_URL, queue: queues.a.toolsQueue, timeoutMs: TIMEOUT_MS, route: 'default-exchange' });
  closers.push(rawA0.close);
  callers.a0 = () => rawCall(rawA0, 'list.departments', envelope(ctx.read, {}));
  // (b′): the same transport with (a)'s caller, to tell the server-side transport's cost from the worker-side proxy's.
  const rawB = await createRawClient({ url: RABBITMQ_URL, queue: queues.b.toolsQueue, timeoutMs: TIMEOUT_MS });
  closers.push(rawB.close);
  callers.bt = () => rawCall(rawB, 'list.departments', envelope(ctx.read, {}));
  // (e7), (e10): today's ideal beside the one before issue 25, started after the capture so its sessions log nothing.
  let previousIdeal;
  if (PREVIOUS_IDEAL_VARIANTS.some((variant) => VARIANT_ORDER.includes(variant))) {
    previousIdeal = await forkServer('ideal.mjs', {
      ...idealEnv,
      BENCH_QUEUE: queues.p.toolsQueue,
      BENCH_IDEAL_FUSED: '0',
      BENCH_IDEAL_DISPATCH_STATE: '1',
      BENCH_IDEAL_IDENTITY_WITH_PERMISSIONS: '1',
    });
    children.push(previousIdeal);
    const rawP = await createRawClient({ url: RABBITMQ_URL, queue: queues.p.toolsQueue, timeoutMs: TIMEOUT_MS });
    closers.push(rawP.close);
    callers.er7 = () => rawCall(rawP, 'list.departments', envelope(ctx.read, {}));
    callers.ew10 = () => rawCall(rawP, 'create.department', envelope(ctx.write, { name: `Bench e10 ${unique()}` }));
  }
  // (c mem), (d mem): the same build with the quota counted in its memory, against which the shared count's cost is
  // measured in the same run. Started after the statement capture, so its sessions log nothing.
  let memoryServer;
  if (MEMORY_QUOTA_VARIANTS.some((variant) => VARIANT_ORDER.includes(variant))) {
    memoryServer = await stack.startServer({ env: { TOOL_CALL_QUOTA_STORE: 'memory', AGENT_TOOLS_QUEUE: queues.m.toolsQueue, AGENT_RUNS_QUEUE: queues.m.runsQueue } });
    children.push(memoryServer);
    const memoryCaller = await newToolService(queues.m.toolsQueue);
    const memoryRead = toRpcProxy(listDepartmentsTool, memoryCaller);
    const memoryWrite = toRpcProxy(createDepartmentTool, memoryCaller);
    callers.cm = () => invoke(memoryRead, {}, ctx.read);
    callers.dm = () => invoke(memoryWrite, { name: `Bench dm ${unique()}` }, ctx.write);
  }
  const serverPidOf = {
    a0: () => rawEcho.pid,
    a: () => rawEcho.pid,
    b: () => nestEcho.pid,
    bt: () => nestEcho.pid,
    c: () => server.pid,
    cm: () => memoryServer.pid,
    d: () => server.pid,
    dm: () => memoryServer.pid,
    er: () => ideal.pid,
    ew: () => ideal.pid,
    er7: () => previousIdeal.pid,
    ew10: () => previousIdeal.pid,
  };
  const singleBroker = brokerPid();
  const brokerPids = { single: singleBroker ? [singleBroker] : [], cluster: [] };
  let pooler;
  let order = VARIANT_ORDER;
  let placement;
  if (MODE === 'cluster') {
    ({ placement, pooler } = await clusterSetting({ stack, infrastructure, idealEnv, callers, serverPidOf, brokerPids, toolCallers, echoVariants, children }));
    order = [...VARIANT_ORDER, ...VARIANT_ORDER.map((variant) => `q${variant}`).filter((variant) => variant in CLUSTER_VARIANTS)];
  }

  const dbPids = async () =>
    (await stack.owner.query(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND usename = $2`, [stack.database, APP_ROLE.name])).rows.map((r) => r.pid);

  // The writes' departments are removed after each write phase (outside its timing; audit and ledger rows stay): the
  // read lists the departments of its school, and under row-level security it scans the whole table, so rows piling
  // up from the writes would slow every later read (and its ideal) a little more, round after round.
  const clearWrittenDepartments = async () => {
    await stack.owner.query(`DELETE FROM departments WHERE name LIKE 'Bench %'`);
    await stack.owner.query('VACUUM ANALYZE departments');
  };
  /** One slice of a phase: `concurrency` callers back to back for `ms`; raw sums, so that slices add up. */
  const runSlice = async (variant, concurrency, ms) => {
    const call = callers[variant];
    const serverPid = serverPidOf[variant]();
    // The broker's CPU is every node of the variant's setting; the database's, on the cluster, PgBouncer's as well.
    const brokers = brokerPids[onCluster(variant) ? 'cluster' : 'single'];
    const brokerCpu = () => (brokers.length ? brokers.reduce((sum, pid) => sum + cpuMicros(pid), 0) : NaN);
    const poolerCpu = () => (onCluster(variant) && pooler ? cpuMicros(pooler) : 0);
    // Pools open and close connections between slices: a backend counts from its CPU at the start (0 if it opened
    // during the slice) to its CPU at the end; one that exited during the slice is lost (pg's idle timeout is 10 s).
    const backendsBefore = new Map((await dbPids()).map((pid) => [pid, cpuMicros(pid)]));
    const before = { client: selfCpuMicros(), server: cpuMicros(serverPid), broker: brokerCpu(), db: poolerCpu() };
    const machineBefore = machineBusy();
    const latencies = [];
    let errors = 0;
    let firstError;
    const start = performance.now();
    const end = start + ms;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < end) {
          const t0 = performance.now();
          try {
            await call();
            latencies.push(performance.now() - t0);
          } catch (error) {
            errors += 1;
            firstError ??= error;
          }
        }
      }),
    );
    const seconds = (performance.now() - start) / 1000;
    if (WRITE_VARIANTS.has(variant)) await clearWrittenDepartments();
    let db = poolerCpu();
    for (const pid of await dbPids()) {
      const now = cpuMicros(pid);
      db += Math.max(0, now - (backendsBefore.get(pid) ?? 0));
    }
    const after = { client: selfCpuMicros(), server: cpuMicros(serverPid), broker: brokerCpu(), db };
    const cpu = Object.fromEntries(Object.keys(before).map((k) => [k, after[k] - before[k]]));
    // The whole machine's busy time over the same window: what is not the measured processes' is someone else's.
    return { latencies, errors, firstError, seconds, cpu, machine: machineBusy() - machineBefore, rssMb: rssBytes(serverPid) / 2 ** 20 };
  };

  /** A phase's result from its slices: latencies pooled, calls over the summed time, CPU over all calls. */
  const phaseResult = (variant, concurrency, slices) => {
    const latencies = slices.flatMap((s) => s.latencies).sort((x, y) => x - y);
    const errors = slices.reduce((sum, s) => sum + s.errors, 0);
    const firstError = slices.find((s) => s.firstError)?.firstError;
    const n = latencies.length || 1;
    const sum = (key) => slices.reduce((total, s) => total + s.cpu[key], 0);
    const seconds = slices.reduce((total, s) => total + s.seconds, 0);
    const measured = ['client', 'server', 'broker', 'db'].reduce((total, k) => total + (sum(k) || 0), 0);
    return {
      variant,
      concurrency,
      calls: latencies.length,
      errors,
      firstError: firstError ? String(firstError.message ?? firstError).slice(0, 300) : undefined,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      callsPerSec: latencies.length / seconds,
      cpu: Object.fromEntries(['client', 'server', 'broker', 'db'].map((k) => [k, sum(k) / n])),
      foreignShare: foreignShare(slices.reduce((total, s) => total + s.machine, 0), measured, seconds),
      rssMb: slices.at(-1).rssMb,
    };
  };

  const loadBeforePhases = loadavg().map((l) => l.toFixed(2)).join(' ');
  log(`warming up every variant (${WARM_MS} ms at c16)`);
  for (const variant of order) await runSlice(variant, 16, WARM_MS);

  // Each round's phase of a variant is SLICES slices, interleaved with the other variants' slices (in an order that
  // rotates, so that no variant always follows the same one). This 2-core VM's speed drifts by up to 3x within seconds
  // (another tenant's load); short alternating slices expose every variant of a ratio to the same drift.
  const phases = [];
  // The 1-minute load average after each round's phase: what else ran on the 2 cores meanwhile (this run included).
  const loads = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const concurrency of CONCURRENCIES) {
      const slices = new Map(order.map((variant) => [variant, []]));
      for (let s = 0; s < SLICES; s++) {
        for (let i = 0; i < order.length; i++) {
          const variant = order[(i + s) % order.length];
          slices.get(variant).push(await runSlice(variant, concurrency, PHASE_MS / SLICES));
        }
      }
      loads.push({ round, concurrency, load: +loadavg()[0].toFixed(2) });
      for (const variant of order) {
        const result = { round, ...phaseResult(variant, concurrency, slices.get(variant)) };
        phases.push(result);
        log(
          `round ${round}/${ROUNDS} c${concurrency} ${variant.padEnd(2)}: p50 ${result.p50.toFixed(2)} ms p99 ${result.p99.toFixed(2)} ms ${result.callsPerSec.toFixed(0)} calls/s · CPU µs/call client ${result.cpu.client.toFixed(0)} server ${result.cpu.server.toFixed(0)} broker ${result.cpu.broker.toFixed(0)} db ${result.cpu.db.toFixed(0)} · RSS ${result.rssMb.toFixed(0)} MB${result.errors ? ` · ${result.errors} ERRORS: ${result.firstError}` : ''}`,
        );
      }
    }
  }

  const rows = aggregate(phases, CONCURRENCIES, order);
  const ratioRows = ratios(phases, CONCURRENCIES, MODE === 'cluster' ? CLUSTER_PAIRS : undefined);
  const targetRows = targets(ratioRows);
  const noise = noiseVerdict(
    Number(loadBefore.split(' ')[0]),
    phases.map((phase) => ({ label: `${phase.variant} c${phase.concurrency} r${phase.round}`, foreignShare: phase.foreignShare })),
  );
  if (noise.noisy) log(noise.text.replace(/\*\*/g, ''));
  const meta = {
    startedAt,
    mode: MODE,
    rounds: ROUNDS,
    phaseMs: PHASE_MS,
    slices: SLICES,
    prefetch: PREFETCH,
    poolSize: POOL_SIZE,
    cpus: cpus().length,
    loadBefore,
    loadBeforePhases,
    loadDuring: loads,
    loadAfter: loadavg().map((l) => l.toFixed(2)).join(' '),
    noise,
  };
  if (started.sink) meta.tracing = { ...started.sink.counts };
  const table = markdown({ rows, ratioRows, targetRows, statements, meta });
  if (MODE === 'cluster') {
    Object.assign(meta, { placement, concurrencies: CONCURRENCIES });
    return clusterReport({ meta, statements, statementLists, phases, rows, ratioRows, table });
  }
  // The streaming phases measure the first server's run-events ingest: the memory-quota server (its own queues) goes.
  if (memoryServer) await memoryServer.stop();
  const stream = flag('no-stream') ? undefined : await streaming({ stack, server, queues, children, closers });
  let scaleOutResult;
  if (MODE === 'full' && !flag('no-scale-out')) scaleOutResult = await scaleOut({ stack, server });

  mkdirSync(RESULTS, { recursive: true });
  // latest.* is the full run only: a run with other rounds, phases, variants or pool writes custom.* instead.
  const custom = customRun();
  const base = `${RESULTS}${SMOKE ? 'smoke' : custom ? 'custom' : 'latest'}`;
  const json = { meta, variants: VARIANTS, statements, statementLists, phases, rows, ratios: ratioRows, targets: targetRows, stream, scaleOut: scaleOutResult };
  writeFileSync(`${base}.json`, `${JSON.stringify(json, null, 2)}\n`);
  writeFileSync(`${base}.md`, `# Tool-call hop benchmark\n\n${table}\n${stream ? `\n${stream.table}\n` : ''}${scaleOutResult ? `\n${scaleOutMarkdown(scaleOutResult)}\n` : ''}\nStatements of one call:\n\n${Object.entries(statementLists).map(([v, list]) => `- (${v}): ${list.length}\n${list.map((sql) => `  - \`${sql.slice(0, 160)}${sql.length > 160 ? '…' : ''}\``).join('\n')}`).join('\n')}\n`);
  writeFileSync(`${base}.svg`, `${svgChart({ rows, concurrencies: CONCURRENCIES, variants: VARIANT_ORDER, title: `Tool-call hop, ${MODE}, ${startedAt.slice(0, 16)}Z (median of ${ROUNDS} interleaved rounds)` })}\n`);
  console.log(`\n${table}\n`);
  if (stream) console.log(`${stream.table}\n`);
  if (scaleOutResult) console.log(`${scaleOutMarkdown(scaleOutResult)}\n`);
  log(`wrote ${base}.json, .md and .svg`);
  const totalErrors = phases.reduce((sum, p) => sum + p.errors, 0);
  const problems = [];
  if (totalErrors > 0) problems.push(`${totalErrors} call(s) failed`);
  if (stream) problems.push(...stream.problems);
  if (capture && !(statements.match.read && statements.match.write)) {
    const message = 'the ideal pipeline no longer issues the statements the server issues (update bench/servers/ideal.mjs)';
    if (SMOKE) log(`warning: ${message}`);
    else problems.push(message);
  }
  if (scaleOutResult && !scaleOutResult.ok) problems.push('the scale-out check lost or duplicated work');
  return problems;
};

/** A run with other rounds, phases, variants or pool than the defaults writes `custom` results, never the reference ones. */
const customRun = () => TRACING || ['rounds', 'phase-ms', 'slices', 'concurrency', 'variants', 'pool'].some((name) => option(name) !== undefined);

/**
 * The cluster setting: (a) to (e) again, each keyed `q<variant>`, on the bench's three RabbitMQ nodes with quorum
 * queues (the project's processes given the node list), the server's and the ideal's database connections through
 * PgBouncer in transaction pooling, the server's LISTEN for run events direct (it needs a session). Adds the variants
 * to `callers`, `serverPidOf` and `brokerPids`; resolves to where everything landed, checked with the broker.
 */
const clusterSetting = async ({ stack, infrastructure, idealEnv, callers, serverPidOf, brokerPids, toolCallers, echoVariants, children }) => {
  const { cluster, pgbouncer } = infrastructure;
  const suffix = stack.suffix;
  const names = {
    server: rmqNames(`bench-q-${suffix}`, `bench-q-runs-${suffix}`),
    a: rmqNames(`bench-qa-${suffix}`, `bench-qa-runs-${suffix}`),
    b: rmqNames(`bench-qb-${suffix}`, `bench-qb-runs-${suffix}`),
    e: rmqNames(`bench-qe-${suffix}`, `bench-qe-runs-${suffix}`),
  };
  // Through one node: a quorum queue is led by the node that declares it, so every variant's tools queue has the same
  // leader. (They go with the nodes at the end.)
  for (const queueNames of Object.values(names)) await declareTopology(cluster.url(LEADER_NODE), queueNames, { queueType: 'quorum' });
  const serverEnv = {
    RABBITMQ_URL: cluster.urls(),
    RABBITMQ_QUEUE_TYPE: 'quorum',
    AGENT_TOOLS_QUEUE: names.server.toolsQueue,
    AGENT_RUNS_QUEUE: names.server.runsQueue,
    DATABASE_URL: pgbouncer.appUrl(stack.database),
    DATABASE_LISTEN_URL: stack.env.DATABASE_URL,
  };
  const transportNode = async () => {
    // /ready answers once the broker is connected; the broker lists the connection a moment later at most.
    for (let attempt = 0; attempt < 20; attempt++) {
      const found = (await cluster.connections(LEADER_NODE)).filter((connection) => connection.name === 'naalya-server');
      if (found.length === 1) return found[0].node;
      await sleep(250);
    }
    throw new Error("the server's tool transport is not connected to the cluster (or more than once)");
  };
  // The server picks its first node at random, as every replica does. The bench keeps it off the leader's node and
  // puts the callers on the third: a call then crosses the cluster at every step (caller's node → leader → consumer's
  // node, the reply back to the caller's node), the costliest placement, and the same in every run. Up to 5 starts
  // (each lands off the leader 2 times in 3); after that the run goes on with the placement it got, and says so.
  let server;
  let serverNode;
  for (let attempt = 1; ; attempt++) {
    server = await stack.startServer({ env: serverEnv });
    children.push(server);
    serverNode = await transportNode();
    if (serverNode !== LEADER_NODE || attempt === 5) break;
    await server.stop();
  }
  const callerNode = [1, 2, 3].find((node) => node !== serverNode && node !== LEADER_NODE);
  const broker = { list: cluster.urls(), node: (index) => cluster.url(index + 1), serverNode: serverNode - 1, callerNode: callerNode - 1 };
  const ideal = await forkServer('ideal.mjs', {
    ...idealEnv,
    RABBITMQ_URL: broker.node(broker.serverNode),
    BENCH_QUEUE: names.e.toolsQueue,
    DATABASE_URL: pgbouncer.appUrl(stack.database),
  });
  children.push(ideal);
  const tools = await toolCallers(broker, names.server.toolsQueue, names.e.toolsQueue);
  const echoes = await echoVariants(broker, names);
  for (const [variant, call] of Object.entries({ ...tools, ...echoes.callers })) callers[`q${variant}`] = call;
  Object.assign(serverPidOf, {
    qa: () => echoes.rawEcho.pid,
    qb: () => echoes.nestEcho.pid,
    qc: () => server.pid,
    qd: () => server.pid,
    qer: () => ideal.pid,
    qew: () => ideal.pid,
  });
  brokerPids.cluster = await Promise.all([1, 2, 3].map((node) => cluster.pid(node)));

  // Where everything landed, as the broker sees it: a ratio compares like with like only if its two variants took the
  // same way (the server's other connections, for runs and run events, are off the tool path and land anywhere).
  // Connection name: [node, how many] (the worker's client and the raw client: one each for the echo and the tool calls).
  const expected = {
    'naalya-server': [serverNode, 1],
    'naalya-bench-nest-echo': [serverNode, 1],
    'naalya-bench-raw-echo': [serverNode, 1],
    'naalya-bench-ideal': [serverNode, 1],
    'naalya-worker': [callerNode, 2],
    'naalya-bench-raw-client': [callerNode, 2],
  };
  const connections = (await cluster.connections(LEADER_NODE)).filter((connection) => connection.name in expected);
  const toolsQueues = new Set(Object.values(names).map((queueNames) => queueNames.toolsQueue));
  const leaders = (await cluster.leaders(LEADER_NODE)).filter((queue) => toolsQueues.has(queue.name));
  const leader = `${cluster.nodePrefix}${LEADER_NODE}@localhost`;
  const wrong = [
    ...connections.filter((connection) => connection.node !== expected[connection.name][0]).map((c) => `${c.name} on node ${c.node}`),
    ...Object.entries(expected)
      .filter(([name, [, count]]) => connections.filter((connection) => connection.name === name).length !== count)
      .map(([name, [, count]]) => `${name}: ${connections.filter((connection) => connection.name === name).length} connection(s), ${count} expected`),
    ...leaders.filter((queue) => queue.type !== 'quorum' || queue.leader !== leader).map((q) => `${q.name}: ${q.type}, led by ${q.leader}`),
    ...(leaders.length === toolsQueues.size ? [] : [`${leaders.length} tools queues found, ${toolsQueues.size} expected`]),
  ];
  if (wrong.length) throw new Error(`cluster placement is not what the bench set up: ${wrong.join('; ')}`);
  const placement = {
    leaderNode: LEADER_NODE,
    serverNode,
    callerNode,
    spread: serverNode !== LEADER_NODE,
    members: leaders[0].members.length,
    pgbouncer: { poolMode: 'transaction', poolSize: POOL_SIZE },
  };
  log(
    `cluster: tools queues led by node ${LEADER_NODE} (${placement.members} members), the servers on node ${serverNode}, the callers on node ${callerNode}; PgBouncer (transaction pooling, ${POOL_SIZE} server connections) in front of the cluster setting's servers`,
  );
  return { placement, pooler: pgbouncer.pid };
};

/** The cluster run's results: the per-setting summary printed and written with every phase's detail to results/cluster.*. */
const clusterReport = ({ meta, statements, statementLists, phases, rows, ratioRows, table }) => {
  const base = `${RESULTS}cluster${customRun() ? '-custom' : ''}`;
  const summary = clusterMarkdown({ rows, ratioRows, meta, statements });
  writeFileSync(`${base}.json`, `${JSON.stringify({ meta, variants: { ...VARIANTS, ...CLUSTER_VARIANTS }, statements, statementLists, phases, rows, ratios: ratioRows }, null, 2)}\n`);
  writeFileSync(`${base}.md`, `# Tool-call hop benchmark: single node and cluster\n\n${summary}\n\n## Every phase\n\n${table}\n`);
  console.log(`\n${summary}\n`);
  log(`wrote ${base}.json and .md`);
  const problems = [];
  const errors = phases.reduce((sum, p) => sum + p.errors, 0);
  if (errors > 0) problems.push(`${errors} call(s) failed`);
  if (!(statements.match.read && statements.match.write)) problems.push('the ideal pipeline no longer issues the statements the server issues (update bench/servers/ideal.mjs)');
  return problems;
};

/**
 * Tokens to SSE clients: the server's run-events ingest and SSE route (runs opened through its API) against the
 * baseline (servers/sse-baseline.mjs: INSERT and NOTIFY, LISTEN, SSE), the same publisher and events for both, at 1
 * and 64 concurrent runs paced like a model, and 64 runs as fast as they go (capacity). See lib/stream.mjs.
 */
const streaming = async ({ stack, server, queues, children, closers }) => {
  const loadBefore = loadavg().map((l) => l.toFixed(2)).join(' ');
  const rounds = Number(option('stream-rounds', SMOKE ? 1 : 3));
  const slices = Number(option('stream-slices', SMOKE ? 1 : 2));
  // A paced phase: 1 s of a model at 50 tokens/s (0.3 s in the smoke run, which judges no number and has a minute).
  const paced = SMOKE ? 15 : 50;
  const phases = [
    { label: 'c1', concurrency: 1, tokens: paced, tokenMs: 20 },
    { label: 'c64', concurrency: 64, tokens: paced, tokenMs: 20 },
    // Capacity: one token per ms per run is more than the path takes, so batches grow and events/s is what it does.
    ...(SMOKE ? [] : [{ label: 'c64 flood', concurrency: 64, tokens: 100, tokenMs: 1 }]),
  ];
  const table = 'bench_stream_events';
  await stack.owner.query(`CREATE TABLE IF NOT EXISTS ${table} (run_id uuid NOT NULL, seq int NOT NULL, type text NOT NULL, payload jsonb NOT NULL, PRIMARY KEY (run_id, seq))`);
  await stack.owner.query(`GRANT SELECT, INSERT ON ${table} TO ${APP_ROLE.name}`);
  const baselineServer = await forkServer('sse-baseline.mjs', {
    RABBITMQ_URL,
    BENCH_QUEUE: runEventsIngestQueue(queues.s),
    BENCH_PREFETCH: String(RUN_EVENTS_PREFETCH),
    DATABASE_URL: stack.env.DATABASE_URL,
    DATABASE_POOL_SIZE: String(POOL_SIZE),
  });
  children.push(baselineServer);
  const ourNames = rmqNames(stack.toolsQueue, stack.runsQueue);
  const publishers = {
    ours: await startEventPublisher(RABBITMQ_URL, ourNames.runEventsExchange),
    baseline: await startEventPublisher(RABBITMQ_URL, queues.s.runEventsExchange),
  };
  for (const publisher of Object.values(publishers)) closers.push(() => publisher.close());
  const bearers = [await login(server.baseUrl, 'admin@greenhill.school'), await login(server.baseUrl, 'admin@lakeside.school')];
  const baselineUrl = `http://127.0.0.1:${baselineServer.ready.port}`;
  const targets = {
    ours: {
      exchange: ourNames.runEventsExchange,
      prepare: directRuns({ baseUrl: server.baseUrl, bearers }),
      streamUrl: (run) => `${server.baseUrl}/agent/threads/${run.threadId}/runs/${run.runId}/events`,
      streamHeaders: (run) => ({ authorization: `Bearer ${run.bearer}` }),
      serverPid: () => server.pid,
    },
    baseline: {
      exchange: queues.s.runEventsExchange,
      prepare: async (n) => Array.from({ length: n }, () => ({ runId: randomUUID(), threadId: randomUUID() })),
      streamUrl: (run) => `${baselineUrl}/runs/${run.runId}/events`,
      streamHeaders: () => ({}),
      serverPid: () => baselineServer.pid,
    },
  };
  log(`streaming: ${rounds} round(s) × ${phases.map((p) => p.label).join(', ')}, ${slices} slice(s) per variant, ours and the baseline alternating`);
  const measured = await measureStreaming({ targets, publishers, brokerUser: brokerCredentialsOf(RABBITMQ_URL).user, phases, rounds, slices, warmUp: !SMOKE, log });
  const meta = { rounds, slices, phases, loadBefore, loadAfter: loadavg().map((l) => l.toFixed(2)).join(' '), cpus: cpus().length };
  const errors = measured.results.reduce((sum, r) => sum + r.errors, 0);
  return { meta, ...measured, table: streamMarkdown({ ...measured, phases, meta }), problems: errors ? [`${errors} streaming error(s): ${measured.results.find((r) => r.firstError)?.firstError}`] : [] };
};

/** Reads and audited writes at c64 (32 + 32) while the server is profiled, then self time by package. */
const profileMode = async ({ server, callers }) => {
  const file = profilePath();
  const seconds = Number(option('seconds', 10));
  const mix = option('mix', 'both'); // --mix=read or --mix=write profiles one of the two
  const concurrency = Number(option('profile-concurrency', 64)); // 1 shows what a lone call spends on its critical path
  const mixed = async (ms) => {
    let calls = 0;
    const end = performance.now() + ms;
    await Promise.all(
      Array.from({ length: concurrency }, async (_, i) => {
        while (performance.now() < end) {
          await (mix === 'write' || (mix !== 'read' && i % 2) ? callers.d() : callers.c());
          calls += 1;
        }
      }),
    );
    return calls;
  };
  await mixed(2000);
  rmSync(`${file}.done`, { force: true });
  server.child.kill('SIGUSR2');
  await sleep(200);
  const calls = await mixed(seconds * 1000);
  server.child.kill('SIGUSR2');
  for (let i = 0; i < 100 && !existsSync(`${file}.done`); i++) await sleep(100);
  rmSync(`${file}.done`, { force: true });
  const summary = summariseProfile(file);
  const label = option('label', 'current');
  const what = mix === 'read' ? 'list_departments' : mix === 'write' ? 'create_department' : 'half list_departments / half create_department';
  const md = profileMarkdown(`Server CPU profile (${label}), c${concurrency}, ${seconds} s, ${what}`, summary, calls);
  writeFileSync(`${RESULTS}profile-${label}.md`, `${md}\n`);
  writeFileSync(`${RESULTS}profile-${label}.json`, `${JSON.stringify({ calls, seconds, ...summary }, null, 2)}\n`);
  console.log(`\n${md}\n`);
  return [];
};
const profilePath = () => `${RESULTS}profile-${option('label', 'current')}.cpuprofile`;

/** 60 s at c64 (32 readers, 32 audited writers); the server's RSS every 5 s. */
const soakMode = async ({ server, callers }) => {
  const seconds = Number(option('seconds', 60));
  const samples = [];
  let calls = 0;
  let errors = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  const sampler = setInterval(() => samples.push({ t: Math.round((performance.now() - start) / 1000), rssMb: +(rssBytes(server.pid) / 2 ** 20).toFixed(1) }), 5000);
  samples.push({ t: 0, rssMb: +(rssBytes(server.pid) / 2 ** 20).toFixed(1) });
  await Promise.all(
    Array.from({ length: 64 }, async (_, i) => {
      while (performance.now() < end) {
        try {
          await (i % 2 ? callers.d() : callers.c());
          calls += 1;
        } catch {
          errors += 1;
        }
      }
    }),
  );
  clearInterval(sampler);
  samples.push({ t: seconds, rssMb: +(rssBytes(server.pid) / 2 ** 20).toFixed(1) });
  // Growth after the first 5 s (pools, JIT and caches filled), to the end.
  const warm = samples.find((s) => s.t >= 5) ?? samples[0];
  const growth = samples.at(-1).rssMb - warm.rssMb;
  const result = { seconds, calls, errors, callsPerSec: Math.round(calls / seconds), samples, growthMb: +growth.toFixed(1), target: 'growth < 20 MB', met: growth < 20 };
  writeFileSync(`${RESULTS}soak${flag('heap') ? '-gc' : ''}.json`, `${JSON.stringify(result, null, 2)}\n`);
  console.log(`\nSoak: ${calls} calls (${result.callsPerSec}/s), ${errors} errors; RSS ${samples.map((s) => `${s.t}s ${s.rssMb}`).join(', ')} MB; growth after warm-up ${result.growthMb} MB (target < 20 MB: ${result.met ? 'met' : 'NOT met'})\n`);
  return errors ? [`${errors} call(s) failed in the soak`] : result.met ? [] : ['memory grew by 20 MB or more'];
};

/**
 * Two server processes and two worker processes (apps/worker, scripted model) on the same queues; one server is
 * SIGKILLed mid-run. Conversations go through the surviving server's API (a thread, a run, its events): each asks for
 * one new department, so its run makes one audited write over the tools queue, which both servers consume. Every
 * conversation must finish with its write done exactly once: one department, one audit row and one ledger row each,
 * nothing left in the tools or runs queue, nothing dead-lettered, and both servers and both workers used CPU.
 */
const scaleOut = async ({ stack, server }) => {
  const seconds = SMOKE ? 3 : 9;
  const lanes = 8;
  log(`scale-out: two servers, two worker processes, ${lanes} conversations at a time for ${seconds} s; SIGKILL of one server after ${seconds / 3} s`);
  const second = await stack.startServer();
  const workers = [];
  try {
    for (let i = 0; i < 2; i++) workers.push(await stack.startWorker({ TOOL_CALL_TIMEOUT_MS: String(TIMEOUT_MS) }));
    const token = await login(second.baseUrl, 'admin@lakeside.school');
    const cpu = () => ({ servers: [cpuMicros(server.pid), cpuMicros(second.pid)], workers: workers.map((worker) => cpuMicros(worker.pid)) });
    const before = cpu();
    const outcomes = [];
    const prefix = `Scale ${randomUUID().slice(0, 8)}`;
    let n = 0;
    const end = performance.now() + seconds * 1000;
    let atKill;
    const killer = sleep((seconds * 1000) / 3).then(() => {
      atKill = { conversations: outcomes.length, cpu: cpu() };
      server.child.kill('SIGKILL');
    });
    const createDepartment = async (name) => {
      const events = await converse(second.baseUrl, token, `create a department called ${name}`, 120_000);
      const results = events.filter((event) => event.type === 'TOOL_CALL_RESULT').map((event) => JSON.parse(event.content));
      const finish = events.findLast((event) => event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR');
      const ok = finish?.type === 'RUN_FINISHED' && results.length === 1 && !('error' in results[0]);
      return { name, ok, detail: ok ? undefined : JSON.stringify({ finish: finish?.type, results }).slice(0, 300) };
    };
    await Promise.all(
      Array.from({ length: lanes }, async () => {
        while (performance.now() < end) {
          const name = `${prefix} ${++n}`;
          outcomes.push(await createDepartment(name).catch((error) => ({ name, ok: false, detail: String(error?.message ?? error).slice(0, 300) })));
        }
      }),
    );
    await killer;
    const after = cpu();
    const count = async (sql) => Number((await stack.owner.query(sql, [`${prefix} %`])).rows[0].count);
    const departments = await count(`SELECT count(DISTINCT name) FROM departments WHERE name LIKE $1`);
    const departmentRows = await count(`SELECT count(*) FROM departments WHERE name LIKE $1`);
    const auditRows = await count(
      `SELECT count(*) FROM audit_log a JOIN departments d ON a.resource_id = d.id::text WHERE d.name LIKE $1 AND a.action = 'create'`,
    );
    const ledgerRows = await count(`SELECT count(*) FROM tool_call_ledger WHERE event = 'create.department' AND result::jsonb -> 'data' ->> 'name' LIKE $1`);
    const connection = await amqplib.connect(RABBITMQ_URL);
    const channel = await connection.createChannel();
    const names = rmqNames(stack.env.AGENT_TOOLS_QUEUE, stack.env.AGENT_RUNS_QUEUE);
    const left = { tools: (await channel.checkQueue(names.toolsQueue)).messageCount, runs: (await channel.checkQueue(names.runsQueue)).messageCount };
    const deadLetters = await channel.checkQueue(names.deadLetterQueue);
    await connection.close();
    const failed = outcomes.filter((o) => !o.ok);
    const ms = (micros) => Math.round(micros / 1000);
    const result = {
      seconds,
      conversations: outcomes.length,
      conversationsBeforeKill: atKill.conversations,
      failed: failed.length,
      firstFailure: failed[0]?.detail,
      departments,
      departmentRows,
      auditRows,
      ledgerRows,
      queueMessagesLeft: left.tools + left.runs,
      deadLettered: deadLetters.messageCount,
      serverCpuMsBeforeKill: atKill.cpu.servers.map((micros, i) => ms(micros - before.servers[i])),
      workerCpuMs: after.workers.map((micros, i) => ms(micros - before.workers[i])),
    };
    result.ok =
      result.conversations > 0 &&
      result.failed === 0 &&
      [departments, departmentRows, auditRows, ledgerRows].every((rows) => rows === result.conversations) &&
      result.queueMessagesLeft === 0 &&
      result.deadLettered === 0 &&
      [...result.serverCpuMsBeforeKill, ...result.workerCpuMs].every((used) => used > 0);
    log(`scale-out: ${JSON.stringify(result)}`);
    if (MODE === 'scale-out' && !result.ok) return ['the scale-out check lost or duplicated work'];
    return MODE === 'scale-out' ? [] : result;
  } finally {
    for (const worker of workers) await worker.stop();
    await second.stop();
  }
};

const scaleOutMarkdown = (r) =>
  `Scale-out (two servers, two worker processes, one server SIGKILLed after ${r.conversationsBeforeKill} of ${r.conversations} conversations, each one audited write): ${r.failed} failed; departments ${r.departments} (rows ${r.departmentRows}), audit rows ${r.auditRows}, ledger rows ${r.ledgerRows} for ${r.conversations} conversations; ${r.queueMessagesLeft} left in the tools and runs queues, ${r.deadLettered} dead-lettered; server CPU before the kill ${r.serverCpuMsBeforeKill.join(' ms / ')} ms, worker CPU ${r.workerCpuMs.join(' ms / ')} ms → ${r.ok ? 'nothing lost, nothing doubled' : 'FAILED'}.`;

main().then(
  (problems) => {
    if (Array.isArray(problems) && problems.length) {
      console.error(`bench: ${problems.join('; ')}`);
      process.exit(1);
    }
    process.exit(0);
  },
  (error) => {
    console.error(`bench failed: ${error?.stack ?? error}`);
    process.exit(1);
  },
);
