#!/usr/bin/env node
// `node bench/hop-profile.mjs`: what the hop costs in CPU per call against raw amqplib, in one run, with RabbitMQ only
// (no database, no built server): echo calls through
//   (a)  raw amqplib client → servers/raw-echo.mjs (plain amqplib, ack after reply)
//   (b′) raw amqplib client → servers/nest-echo.mjs (AckAfterReplyTransport): the transport's server side alone
//   (b)  the worker's toRpcProxy + AgentToolService (RmqRpcClient) → servers/nest-echo.mjs: the whole hop
// in interleaved slices, reporting each side's process CPU per call (the caller and the servers: process.cpuUsage, the
// servers' over IPC; the broker: /proc/<pid>/stat). CPU per call is what the hop's code costs; on a shared machine it moves far
// less than latency does, so it is the figure to compare before and after a change. See bench/README.md.
//
//   node bench/hop-profile.mjs                    c1 and c64, 20 000 calls per variant and concurrency
//   node bench/hop-profile.mjs --calls=5000 --concurrency=64 --slices=5
//   node bench/hop-profile.mjs --cpu-prof         then V8 CPU profiles of each variant's caller and server (c64 unless
//                                                 --profile-concurrency=1) → results/hop-profile.md and *.cpuprofile
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Logger } from '@nestjs/common';
import { identityFromUserDetails, listDepartmentsTool } from '@naalya/agent-tools';
import { declareTopology, deleteTopology, rmqNames } from '@naalya/rmq';
import { RABBITMQ_URL } from '@naalya/test-stack';
import { AgentToolService, callScopeFromContext, toRpcProxy, toolCallIdempotencyKey } from '@naalya/worker/testing';
import { forkServer, serverCpuMicros } from './lib/fork-server.mjs';
import { CORES, foreignShare, loadNow, machineBusy, noiseVerdict } from './lib/noise.mjs';
import { brokerPid, cpuMicros, selfCpuMicros } from './lib/proc.mjs';
import { createRawClient } from './lib/raw-client.mjs';
import { profileMarkdown, summariseProfile } from './lib/profile-summary.mjs';

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const option = (name, fallback) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback;
const CALLS = Number(option('calls', 20_000));
const SLICES = Number(option('slices', 10));
const CONCURRENCIES = option('concurrency', '1,64').split(',').map(Number);
const PREFETCH = Number(option('pool', 8)); // the transport's prefetch is the database pool (.env.example: 8)
const PROFILE = flag('cpu-prof');
const PROFILE_CONCURRENCY = Number(option('profile-concurrency', 64));
const TIMEOUT_MS = 15_000;
const RESULTS = fileURLToPath(new URL('./results/', import.meta.url));
const PRELOAD = fileURLToPath(new URL('./lib/cpu-profile-preload.mjs', import.meta.url));
const VARIANTS = ['a', 'bt', 'b'];
const LABELS = { a: '(a) raw client → raw echo', bt: '(b′) raw client → transport', b: '(b) worker proxy → transport' };

Logger.overrideLogger(['error', 'warn']);
const log = (line) => console.log(`[hop ${new Date().toISOString().slice(11, 19)}] ${line}`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fmt = (value, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : '–');

// A staff member's dispatch context, as the server mints it (the echo checks nothing of it; the proxy parses it).
const context = {
  userDetails: { id: 'bench-user', userType: 'staff', schoolId: randomUUID(), campusId: null, fullName: 'Bench Caller', email: 'bench@school.example' },
  runMode: { mode: 'school' },
  run: { runId: 'bench-run', threadId: 'bench-thread' },
  userPermissions: [{ action: 'list', subject: 'Department' }],
  capabilities: { isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: false },
};
const envelope = () => ({
  identity: identityFromUserDetails(context.userDetails),
  scope: callScopeFromContext(context),
  args: {},
  meta: { callId: toolCallIdempotencyKey('bench', randomUUID()), deadline: Date.now() + TIMEOUT_MS },
});

/** `calls` calls, `concurrency` at a time. */
const runCalls = async (call, concurrency, calls) => {
  let started = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, calls) }, async () => {
      while (started < calls) {
        started += 1;
        await call();
      }
    }),
  );
};

const main = async () => {
  const loadBefore = loadNow();
  const suffix = `${process.pid}-${randomUUID().slice(0, 8)}`;
  const names = { a: rmqNames(`hop-a-${suffix}`, `hop-a-runs-${suffix}`), b: rmqNames(`hop-b-${suffix}`, `hop-b-runs-${suffix}`) };
  const closers = [];
  try {
    for (const queues of Object.values(names)) await declareTopology(RABBITMQ_URL, queues);
    const profileEnv = (name) => (PROFILE ? { BENCH_CPU_PROFILE_FILE: `${RESULTS}hop-${name}-server.cpuprofile` } : {});
    const profileArgs = PROFILE ? ['--import', PRELOAD] : [];
    const env = { RABBITMQ_URL, BENCH_PREFETCH: String(PREFETCH) };
    const rawEcho = await forkServer('raw-echo.mjs', { ...env, BENCH_QUEUE: names.a.toolsQueue, ...profileEnv('raw-echo') }, profileArgs);
    closers.push(() => rawEcho.stop('SIGKILL'));
    const nestEcho = await forkServer(
      'nest-echo.mjs',
      { ...env, BENCH_QUEUE: names.b.toolsQueue, BENCH_DLX: names.b.deadLetterExchange, BENCH_EVENT: listDepartmentsTool.event, ...profileEnv('transport') },
      profileArgs,
    );
    closers.push(() => nestEcho.stop('SIGKILL'));
    const rawA = await createRawClient({ url: RABBITMQ_URL, queue: names.a.toolsQueue, timeoutMs: TIMEOUT_MS });
    closers.push(rawA.close);
    const rawB = await createRawClient({ url: RABBITMQ_URL, queue: names.b.toolsQueue, timeoutMs: TIMEOUT_MS });
    closers.push(rawB.close);
    const service = new AgentToolService({ rabbitmqUrl: RABBITMQ_URL, toolsQueue: names.b.toolsQueue, timeoutMs: TIMEOUT_MS });
    await service.onModuleInit();
    closers.push(() => service.onModuleDestroy());
    const proxy = toRpcProxy(listDepartmentsTool, service);
    const rawCall = async (client) => {
      const response = await client.call(listDepartmentsTool.event, envelope());
      if (response?.scopeContext !== 'echo') throw new Error(`unexpected reply ${JSON.stringify(response).slice(0, 200)}`);
    };
    const callers = {
      a: () => rawCall(rawA),
      bt: () => rawCall(rawB),
      b: async () => {
        const output = String(await proxy.invoke({}, { context, toolCallId: `bench-${randomUUID()}`, writer: null, configurable: { thread_id: 'bench' } }));
        if (!output.includes('"scopeContext":"echo"')) throw new Error(`unexpected reply ${output.slice(0, 200)}`);
      },
    };
    const servers = { a: rawEcho, bt: nestEcho, b: nestEcho };
    const broker = brokerPid();
    // Before anything of this run's own: what else is running.
    log(`warming up (load ${fmt(loadBefore, 2)}, ${CORES} cores)`);
    for (const variant of VARIANTS) await runCalls(callers[variant], 16, 3000);

    const rows = [];
    for (const concurrency of CONCURRENCIES) {
      const totals = Object.fromEntries(VARIANTS.map((v) => [v, { calls: 0, seconds: 0, client: 0, server: 0, broker: 0, machine: 0 }]));
      const perSlice = Math.ceil(CALLS / SLICES);
      for (let s = 0; s < SLICES; s++) {
        for (let i = 0; i < VARIANTS.length; i++) {
          // The order rotates, so that no variant always follows the same one (GC debt, broker state).
          const variant = VARIANTS[(i + s) % VARIANTS.length];
          const server = servers[variant];
          const before = { client: selfCpuMicros(), server: await serverCpuMicros(server), broker: broker ? cpuMicros(broker) : 0, machine: machineBusy(), t: performance.now() };
          await runCalls(callers[variant], concurrency, perSlice);
          const total = totals[variant];
          total.calls += perSlice;
          total.seconds += (performance.now() - before.t) / 1000;
          total.client += selfCpuMicros() - before.client;
          total.server += (await serverCpuMicros(server)) - before.server;
          total.broker += broker ? cpuMicros(broker) - before.broker : 0;
          total.machine += machineBusy() - before.machine;
        }
      }
      for (const variant of VARIANTS) {
        const t = totals[variant];
        const row = {
          variant,
          concurrency,
          calls: t.calls,
          callsPerSec: t.calls / t.seconds,
          client: t.client / t.calls,
          server: t.server / t.calls,
          broker: t.broker / t.calls,
          // What else ran on the machine meanwhile, as a share of all its cores.
          foreignShare: foreignShare(t.machine, t.client + t.server + t.broker, t.seconds),
        };
        rows.push(row);
        log(
          `c${concurrency} ${variant.padEnd(2)}: ${fmt(row.callsPerSec)} calls/s · CPU µs/call client ${fmt(row.client, 1)} server ${fmt(row.server, 1)} broker ${fmt(row.broker, 1)} · others used ${fmt(100 * row.foreignShare)} % of the machine`,
        );
      }
    }
    const loadAfter = loadNow();
    const noise = noiseVerdict(loadBefore, rows.map((r) => ({ label: `${r.variant} c${r.concurrency}`, foreignShare: r.foreignShare })));
    const report = markdown(rows, { loadBefore, loadAfter, noise });
    console.log(`\n${report}\n`);
    mkdirSync(RESULTS, { recursive: true });
    writeFileSync(`${RESULTS}hop-cpu.md`, `# The hop's CPU per call\n\n${report}\n`);
    writeFileSync(`${RESULTS}hop-cpu.json`, `${JSON.stringify({ startedAt: new Date().toISOString(), calls: CALLS, slices: SLICES, prefetch: PREFETCH, cores: CORES, loadBefore, loadAfter, noise, rows }, null, 2)}\n`);
    if (PROFILE) await profile({ callers, servers });
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    for (const queues of Object.values(names)) await deleteTopology(RABBITMQ_URL, queues).catch(() => undefined);
  }
};

const markdown = (rows, { loadBefore, loadAfter, noise }) => {
  const lines = [
    `${new Date().toISOString().slice(0, 16)}Z · ${CALLS} calls per variant and concurrency in ${SLICES} interleaved slices · prefetch ${PREFETCH} · ${CORES} cores · load average ${fmt(loadBefore, 2)} before, ${fmt(loadAfter, 2)} after`,
    '',
    '| variant | conc | calls/s | CPU µs/call caller | server | broker | hop (caller + server) | others\' share of the machine |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${LABELS[r.variant]} | ${r.concurrency} | ${fmt(r.callsPerSec)} | ${fmt(r.client)} | ${fmt(r.server)} | ${fmt(r.broker)} | ${fmt(r.client + r.server)} | ${fmt(100 * r.foreignShare)} % |`,
    );
  }
  lines.push('', '| ratio over (a) | conc | caller CPU | server CPU | hop CPU | calls/s |', '|---|---|---|---|---|---|');
  const find = (variant, concurrency) => rows.find((r) => r.variant === variant && r.concurrency === concurrency);
  for (const concurrency of CONCURRENCIES) {
    const a = find('a', concurrency);
    for (const variant of ['bt', 'b']) {
      const r = find(variant, concurrency);
      lines.push(`| ${LABELS[variant]} | ${concurrency} | ${fmt(r.client / a.client, 2)} | ${fmt(r.server / a.server, 2)} | ${fmt((r.client + r.server) / (a.client + a.server), 2)} | ${fmt(r.callsPerSec / a.callsPerSec, 2)} |`);
    }
  }
  lines.push('', noise.text);
  return lines.join('\n');
};

/**
 * One profiled window per variant at PROFILE_CONCURRENCY: this process (the caller) through node:inspector, the
 * variant's server through the preload (SIGUSR2 starts and stops it), then self time by package and function.
 */
const profile = async ({ callers, servers }) => {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  const sections = [];
  for (const variant of VARIANTS) {
    const server = servers[variant];
    // The preload writes where its server was told to; renamed per variant, since (b′) and (b) share a server.
    const file = `${RESULTS}hop-${variant === 'a' ? 'raw-echo' : 'transport'}-server.cpuprofile`;
    rmSync(`${file}.done`, { force: true });
    server.child.kill('SIGUSR2');
    await sleep(200);
    await session.post('Profiler.start');
    await runCalls(callers[variant], PROFILE_CONCURRENCY, CALLS);
    const { profile: clientProfile } = await session.post('Profiler.stop');
    server.child.kill('SIGUSR2');
    for (let i = 0; i < 100 && !existsSync(`${file}.done`); i++) await sleep(100);
    rmSync(`${file}.done`, { force: true });
    const serverFile = `${RESULTS}hop-${variant}-server.cpuprofile`;
    renameSync(file, serverFile);
    const clientFile = `${RESULTS}hop-${variant}-caller.cpuprofile`;
    writeFileSync(clientFile, JSON.stringify(clientProfile));
    const what = `${LABELS[variant]}, c${PROFILE_CONCURRENCY}`;
    sections.push(profileMarkdown(`Caller: ${what}`, summariseProfile(clientFile, 20), CALLS), profileMarkdown(`Server: ${what}`, summariseProfile(serverFile, 20), CALLS));
    log(`profiled ${variant}: ${clientFile}, ${serverFile}`);
  }
  session.disconnect();
  writeFileSync(`${RESULTS}hop-profile.md`, `# Where the hop spends its CPU (V8 profiles, wall-time samples)\n\n${sections.join('\n\n')}\n`);
  log(`wrote ${RESULTS}hop-profile.md`);
};

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
