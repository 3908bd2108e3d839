// The streaming measurement: model tokens through the run-events path to SSE clients, ours against a baseline, in the
// same run. See bench/README.md ("Streaming").
//
// One slice of a phase: `concurrency` runs, each with an SSE client connected before its first event; each run emits
// RUN_STARTED, TEXT_MESSAGE_START, `tokens` TEXT_MESSAGE_CONTENT every `tokenMs` (the model), TEXT_MESSAGE_END and
// RUN_FINISHED, published as the worker publishes them: RunEventBatch messages on a confirm channel, one publish in
// flight per run, the events produced meanwhile waiting and going together in the next batch. A token's latency is
// from its production (when its `timestamp` is stamped; measured on the high-resolution clock, which producer and
// clients share, being one process) to its arrival at its run's SSE client. Every stream must deliver every event once,
// in order, or the slice counts errors.
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { DISPATCH_TOKEN_HEADER, runEventBatchSchema } from '@naalya/agent-tools';
import { RUN_EVENTS_LINGER_MS_DEFAULT, RunEventBuffer } from '@naalya/worker/testing';
import { ConfirmPublisher } from '@naalya/rmq';
import { Logger } from '@nestjs/common';
import { brokerPid, cpuMicros } from './proc.mjs';
import { median } from './report.mjs';

/** How long a slice's streams may take to end after the last event was produced. */
const DRAIN_TIMEOUT_MS = 60_000;
const CONFIRM_TIMEOUT_MS = 15_000;
const CONNECT_TIMEOUT_MS = 15_000;

const percentile = (sorted, q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The worker's run event publisher (its options, plus a confirm timeout so that no wait of the bench is unbounded). */
export const startEventPublisher = async (url, exchange) => {
  const publisher = new ConfirmPublisher({
    url,
    connectionName: 'naalya-bench-run-events',
    what: `publishing to the "${exchange}" exchange`,
    logger: new Logger('BenchRunEvents'),
    recovery: { initialMaxRetries: 0, maxDelay: 1_000 },
    reconnectWaitMs: 5_000,
    confirmTimeoutMs: CONFIRM_TIMEOUT_MS,
    check: (channel) => channel.checkExchange(exchange),
  });
  await publisher.start();
  return publisher;
};

/**
 * One run's events on their way out, batched by the worker's own RunEventBuffer with its default linger: one publish in
 * flight per run, what waits goes together in the next message.
 */
const runOutbox = ({ publisher, exchange, brokerUser, run }) =>
  new RunEventBuffer({
    runId: run.runId,
    meta: { dispatchToken: run.dispatchToken },
    mayPublish: () => true,
    lingerMs: RUN_EVENTS_LINGER_MS_DEFAULT,
    sink: {
      publish: (batch, meta) =>
        publisher.publish(exchange, run.runId, Buffer.from(JSON.stringify(batch)), {
          mandatory: false,
          contentType: 'application/json',
          messageId: randomUUID(),
          timestamp: Math.floor(Date.now() / 1000),
          userId: brokerUser,
          headers: meta.dispatchToken ? { [DISPATCH_TOKEN_HEADER]: meta.dispatchToken } : {},
        }),
    },
  });

/** The events of one run, as a model would produce them (unstamped: each gets its `timestamp` when it is produced). */
export const runEvents = (run, tokens) => {
  const messageId = `msg-${run.runId}`;
  const base = { runId: run.runId, threadId: run.threadId };
  return [
    { ...base, type: 'RUN_STARTED' },
    { ...base, type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', name: 'rover' },
    ...Array.from({ length: tokens }, (_, i) => ({ ...base, type: 'TEXT_MESSAGE_CONTENT', messageId, delta: `token ${i} ` })),
    { ...base, type: 'TEXT_MESSAGE_END', messageId },
    { ...base, type: 'RUN_FINISHED', outcome: { type: 'success' } },
  ];
};

/** Fails at once if the events the bench publishes are not the contract's (the server would dead-letter them). */
export const assertContractEvents = () => {
  const run = { runId: randomUUID(), threadId: randomUUID() };
  runEventBatchSchema.parse({ events: runEvents(run, 2).map((event) => ({ ...event, timestamp: Date.now() })) });
};

/**
 * A run's SSE stream: resolves once the server has answered (so the stream is subscribed), with `done`, which settles
 * when the server ends the stream. `onEvent(seq, event, arrivedAt)` sees each event as its block is complete.
 */
const openStream = async ({ url, headers, signal, onEvent }) => {
  const response = await fetch(url, { headers, signal });
  if (response.status !== 200) throw new Error(`GET ${new URL(url).pathname}: ${response.status} ${(await response.text()).slice(0, 200)}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const done = (async () => {
    let buffered = '';
    for (;;) {
      const { done: ended, value } = await reader.read();
      if (ended) return;
      const arrivedAt = performance.now();
      buffered += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        let id;
        let data;
        for (const line of block.split('\n')) {
          if (line.startsWith('id:')) id = Number(line.slice(3).trim());
          else if (line.startsWith('data:')) data = line.slice(5).trim();
        }
        if (id !== undefined && data !== undefined) onEvent(id, JSON.parse(data), arrivedAt);
      }
    }
  })();
  // Handled here too, so a stream that fails before the slice awaits it is not an unhandled rejection; the slice still
  // sees the failure through `done`.
  done.catch(() => undefined);
  return { done };
};

/**
 * One slice: prepares `concurrency` runs (untimed), connects their streams, then produces their events with tokens
 * paced `tokenMs` apart (each run starting at a random offset within one interval, as independent models do) and waits
 * for every stream to end.
 */
export const streamSlice = async (options) => {
  // Whatever happens, no stream of the slice stays open (the server would hold it until its run ends).
  const abort = new AbortController();
  try {
    return await measureSlice(options, abort);
  } finally {
    abort.abort();
  }
};

const measureSlice = async ({ target, publisher, brokerUser, concurrency, tokens, tokenMs }, abort) => {
  const setupStart = performance.now();
  const runs = await target.prepare(concurrency);
  const setupMs = performance.now() - setupStart;
  const latencies = [];
  let events = 0;
  let errors = 0;
  let firstError;
  const fail = (error) => {
    errors += 1;
    firstError ??= error;
  };
  let lastArrival = 0;
  const states = runs.map((run) => ({ run, produced: [], received: 0, lastSeq: 0 }));
  const connecting = setTimeout(() => abort.abort(new Error(`streams not open within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
  const streams = await Promise.all(
    states.map((state) =>
      openStream({
        url: target.streamUrl(state.run),
        headers: target.streamHeaders(state.run),
        signal: abort.signal,
        onEvent: (seq, event, arrivedAt) => {
          lastArrival = arrivedAt;
          events += 1;
          const expected = state.produced[state.received];
          state.received += 1;
          // Exactly once and in order: seq grows, and the events are the produced ones in their order.
          if (seq <= state.lastSeq || !expected || expected.event.type !== event.type || (event.delta && event.delta !== expected.event.delta)) {
            fail(new Error(`run ${state.run.runId}: event ${state.received} (seq ${seq}, ${event.type}) is not the one produced next (${expected?.event.type ?? 'none'})`));
          } else if (event.type === 'TEXT_MESSAGE_CONTENT') latencies.push(arrivedAt - expected.at);
          state.lastSeq = seq;
        },
      }),
    ),
  ).finally(() => clearTimeout(connecting));
  const server = target.serverPid();
  const broker = brokerPid();
  const cpuBefore = { server: cpuMicros(server), broker: broker ? cpuMicros(broker) : NaN };
  const start = performance.now();
  await Promise.all(
    states.map(async (state) => {
      const outbox = runOutbox({ publisher, exchange: target.exchange, brokerUser, run: state.run });
      const all = runEvents(state.run, tokens);
      // As the worker's step does: a push waits only when too much is queued behind the broker (backpressure).
      const emit = (event) => {
        const produced = { event: { ...event, timestamp: Date.now() }, at: performance.now() };
        state.produced.push(produced);
        return outbox.push(produced.event).catch(fail);
      };
      // Pacing from the planned times, so timer lateness does not add up over a run.
      const offset = Math.random() * tokenMs;
      await sleep(offset);
      await emit(all[0]);
      await emit(all[1]);
      for (let i = 0; i < tokens; i++) {
        const due = start + offset + (i + 1) * tokenMs - performance.now();
        if (due > 0) await sleep(due);
        await emit(all[2 + i]);
      }
      await emit(all.at(-2));
      await emit(all.at(-1));
      await outbox.flush().catch(fail);
    }),
  );
  const produced = performance.now();
  const timeout = setTimeout(() => abort.abort(new Error(`streams still open ${DRAIN_TIMEOUT_MS} ms after the last event`)), DRAIN_TIMEOUT_MS);
  const ends = await Promise.allSettled(streams.map((stream) => stream.done));
  clearTimeout(timeout);
  for (const end of ends) if (end.status === 'rejected') fail(end.reason);
  for (const state of states) {
    if (state.received !== state.produced.length) fail(new Error(`run ${state.run.runId}: ${state.received} of ${state.produced.length} events arrived`));
  }
  const cpu = { server: cpuMicros(server) - cpuBefore.server, broker: broker ? cpuMicros(broker) - cpuBefore.broker : NaN };
  return {
    latencies,
    events,
    errors,
    firstError,
    // From the first event produced to the last one read by its client: what the server stored and fanned out.
    seconds: (Math.max(lastArrival, produced) - start) / 1000,
    drainMs: Math.max(0, lastArrival - produced),
    setupMs,
    cpu,
  };
};

/** A phase's result from its slices: latencies pooled, events over the summed time. */
const phaseResult = (slices) => {
  const latencies = slices.flatMap((s) => s.latencies).sort((x, y) => x - y);
  const events = slices.reduce((sum, s) => sum + s.events, 0);
  const seconds = slices.reduce((sum, s) => sum + s.seconds, 0);
  const firstError = slices.find((s) => s.firstError)?.firstError;
  return {
    tokens: latencies.length,
    events,
    errors: slices.reduce((sum, s) => sum + s.errors, 0),
    firstError: firstError ? String(firstError.message ?? firstError).slice(0, 300) : undefined,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    eventsPerSec: events / seconds,
    drainMs: Math.max(...slices.map((s) => s.drainMs)),
    setupMs: Math.max(...slices.map((s) => s.setupMs)),
    serverCpuPerEvent: slices.reduce((sum, s) => sum + s.cpu.server, 0) / (events || 1),
    brokerCpuPerEvent: slices.reduce((sum, s) => sum + s.cpu.broker, 0) / (events || 1),
  };
};

/**
 * Every phase in `rounds` rounds; within a phase the variants' slices alternate (ours, baseline, baseline, ours, …) so
 * that both see the same drift of this shared machine. Ratios are ours/baseline within a round.
 */
export const measureStreaming = async ({ targets, publishers, brokerUser, phases, rounds, slices, warmUp, log }) => {
  assertContractEvents();
  const results = [];
  const names = Object.keys(targets);
  // Unrecorded: pools, JIT and the ingest's first runs warm up before the first measured slice.
  for (const name of warmUp ? names : []) {
    const warm = await streamSlice({ target: targets[name], publisher: publishers[name], brokerUser, concurrency: 16, tokens: 10, tokenMs: 5 });
    if (warm.errors) throw new Error(`streaming warm-up (${name}): ${warm.firstError?.message ?? warm.firstError}`);
  }
  for (let round = 1; round <= rounds; round++) {
    const loadAtStart = loadavg()[0];
    for (const phase of phases) {
      const bySlice = new Map(names.map((name) => [name, []]));
      for (let s = 0; s < slices; s++) {
        const order = s % 2 ? [...names].reverse() : names;
        for (const name of order) {
          bySlice.get(name).push(
            await streamSlice({ target: targets[name], publisher: publishers[name], brokerUser, concurrency: phase.concurrency, tokens: phase.tokens, tokenMs: phase.tokenMs }),
          );
        }
      }
      const load = loadavg()[0];
      for (const name of names) {
        const result = { round, phase: phase.label, variant: name, concurrency: phase.concurrency, tokenMs: phase.tokenMs, load: +load.toFixed(2), ...phaseResult(bySlice.get(name)) };
        results.push(result);
        log(
          `stream round ${round}/${rounds} ${phase.label} ${name.padEnd(8)}: token→SSE p50 ${result.p50.toFixed(2)} ms p99 ${result.p99.toFixed(2)} ms · ${result.eventsPerSec.toFixed(0)} events/s stored and streamed (drain ${result.drainMs.toFixed(0)} ms; runs set up in ${result.setupMs.toFixed(0)} ms, untimed) · server CPU ${result.serverCpuPerEvent.toFixed(0)} µs/event · load ${load.toFixed(2)}${result.errors ? ` · ${result.errors} ERRORS: ${result.firstError}` : ''}`,
        );
      }
    }
    log(`stream round ${round}/${rounds}: load ${loadAtStart.toFixed(2)} → ${loadavg()[0].toFixed(2)}`);
  }
  return { results, rows: streamRows(results, phases), ratios: streamRatios(results, phases) };
};

const streamRows = (results, phases) =>
  phases.flatMap((phase) =>
    [...new Set(results.map((r) => r.variant))].map((variant) => {
      const runs = results.filter((r) => r.phase === phase.label && r.variant === variant);
      return {
        phase: phase.label,
        variant,
        p50: median(runs.map((r) => r.p50)),
        p99: median(runs.map((r) => r.p99)),
        eventsPerSec: median(runs.map((r) => r.eventsPerSec)),
        serverCpuPerEvent: median(runs.map((r) => r.serverCpuPerEvent)),
        load: runs.map((r) => r.load),
        errors: runs.reduce((sum, r) => sum + r.errors, 0),
      };
    }),
  );

/** ours/baseline per round: p50, p99 and events/s, each phase. */
const streamRatios = (results, phases) =>
  phases.map((phase) => {
    const perRound = results
      .filter((r) => r.phase === phase.label && r.variant === 'ours')
      .map((ours) => {
        const base = results.find((r) => r.phase === phase.label && r.variant === 'baseline' && r.round === ours.round);
        return { round: ours.round, load: ours.load, p50: ours.p50 / base.p50, p99: ours.p99 / base.p99, eventsPerSec: ours.eventsPerSec / base.eventsPerSec };
      });
    return { phase: phase.label, perRound, p50: median(perRound.map((r) => r.p50)), p99: median(perRound.map((r) => r.p99)), eventsPerSec: median(perRound.map((r) => r.eventsPerSec)) };
  });

const fmt = (value, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '–');

export const streamMarkdown = ({ rows, ratios, phases, meta }) => {
  const describe = (phase) => `${phase.label}: ${phase.concurrency} run(s), ${phase.tokens} tokens each, one every ${phase.tokenMs} ms`;
  const lines = [
    `Streaming (${meta.rounds} round(s), ${meta.slices} slice(s) per variant and phase; load average ${meta.loadBefore} before, ${meta.loadAfter} after; ${meta.cpus} CPUs): ${phases.map(describe).join('; ')}.`,
    '',
    '| phase | variant | token→SSE p50 ms | p99 ms | events/s stored + streamed | server CPU µs/event | load (per round) | errors |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.phase} | ${r.variant} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.eventsPerSec, 0)} | ${fmt(r.serverCpuPerEvent, 0)} | ${r.load.map((l) => fmt(l)).join(' / ')} | ${r.errors} |`),
    '',
    '| phase | ours/baseline p50 | p99 | events/s | per round (p50 · p99 · events/s @ load) |',
    '|---|---|---|---|---|',
    ...ratios.map(
      (r) =>
        `| ${r.phase} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.eventsPerSec)} | ${r.perRound.map((x) => `r${x.round}: ${fmt(x.p50)} · ${fmt(x.p99)} · ${fmt(x.eventsPerSec)} @ ${fmt(x.load)}`).join('; ')} |`,
    ),
  ];
  return lines.join('\n');
};

/**
 * Runs the server really holds, opened through its API as the tests, the battery and the tool-call phases open theirs:
 * `POST /agent/context` opens a direct run (a thread of its own, status running) and mints its runtime context with
 * the dispatch token the worker's events carry, in one request. (A run through `POST /agent/threads/:id/runs` reaches
 * the ingest the same way but costs a step on the runs queue each: 64 of them took 5 to 9 s to set up on this loaded
 * machine against 0.6 to 1.4 s here, which the smoke run's minute cannot spare.) `bearers` are the users' tokens,
 * taken in turn: 64 runs at once are several people's, and each user may hold AGENT_DIRECT_RUNS_PER_USER open.
 */
export const directRuns = ({ baseUrl, bearers, timeoutMs = 15_000 }) => {
  let turn = 0;
  const one = async () => {
    const bearer = bearers[turn++ % bearers.length];
    const response = await fetch(`${baseUrl}/agent/context`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: '{}',
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) throw new Error(`POST /agent/context: ${response.status} ${(await response.text()).slice(0, 200)}`);
    const context = await response.json();
    return { ...context.run, bearer, dispatchToken: context.dispatchToken };
  };
  /** `n` new runs, eight set up at a time. */
  return async (n) => {
    const runs = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(8, n) }, async () => {
        while (next < n) runs[next++] = await one();
      }),
    );
    return runs;
  };
};
