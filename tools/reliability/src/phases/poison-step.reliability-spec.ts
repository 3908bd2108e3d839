import { randomUUID } from 'node:crypto';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FINAL,
  awaitRun,
  conversationsOf,
  expectCaught,
  expectPassed,
  recordRunWrites,
  restartWeakened,
  runPhase,
  storedEvents,
  usePhaseTarget,
  type PhaseRow,
  type PhaseTarget,
  type ReliabilityStack,
  type WorkerProcess,
} from '../support/index.js';

// A step that kills every worker that takes it. Two workers run under a supervisor that restarts each one that exits
// (as systemd or Kubernetes would); both carry a preload (worker-preload.mjs, 'poison-step') that ends the process the
// moment it is granted the lease of a start step whose message carries this file's marker, before any event. Nothing
// will ever complete that step: each dispatch kills the worker that takes it, and its unacknowledged copy, redelivered
// to the other, is refused a lease and dropped. The server must end it: the run fails with a sentence once
// AGENT_RUN_MAX_ATTEMPTS dispatches have expired (RUN_ABANDONED; or STEP_DEAD_LETTERED, if the runs queue's delivery
// limit dead-letters it first), within those attempts' leases plus a margin, nothing but the server's RUN_ERROR is in
// its stream, and the thread takes a new message, which the restarted workers complete.
//
// Sabotage: the attempts unbounded (weakened-server.mjs, 'unbounded-attempts'; the configuration itself refuses more
// than 20): the step is dispatched again after every death and the run is still running at the deadline.

const PHASE = 'poison step';
const LEASE_SECONDS = 2;
const SWEEP_MS = 300;
const MAX_ATTEMPTS = 3;
/** Every attempt's lease and a sweep after it, plus a margin for a loaded machine. */
const ENDS_WITHIN_MS = MAX_ATTEMPTS * (LEASE_SECONDS * 1000 + SWEEP_MS) + 4_000;
const MARKER = `poison-${randomUUID().slice(0, 8)}`;

/** A worker kept running: restarted whenever it exits, its deaths counted. */
type Supervised = { deaths: () => number; ready: () => Promise<void>; stop: () => Promise<void> };

const supervise = (stack: ReliabilityStack): Supervised => {
  let stopped = false;
  let deaths = 0;
  let current: WorkerProcess | undefined;
  let starting: Promise<void>;
  const launch = async (): Promise<void> => {
    current = await stack.startWorker({ RELIABILITY_POISON_MARKER: MARKER }, { preload: 'poison-step' });
    const child = current.child;
    const died = () => {
      if (stopped) return;
      deaths += 1;
      starting = launch();
      // Seen by ready(); a restart that fails is its failure, not an unhandled one.
      starting.catch(() => undefined);
    };
    if (child.exitCode !== null || child.signalCode !== null) died();
    else child.once('exit', died);
  };
  starting = launch();
  return {
    deaths: () => deaths,
    ready: async () => {
      // A restart may itself be replaced by the next one before it is awaited.
      for (let seen: Promise<void> | undefined; seen !== starting; ) {
        seen = starting;
        await seen;
      }
    },
    stop: async () => {
      stopped = true;
      await starting.catch(() => undefined);
      await current?.stop('SIGKILL');
    },
  };
};

let workers: Supervised[] = [];

export const poisonStepPhase = (target: PhaseTarget, size: { runs: number }): Promise<PhaseRow> => {
  const runIds: string[] = [];
  return runPhase(
    PHASE,
    target,
    async ({ stack, record, check }) => {
      if (workers.length === 0) workers = [supervise(stack), supervise(stack)];
      await Promise.all(workers.map((worker) => worker.ready()));
      const talk = await conversationsOf(stack, 'admin@greenhill.school');
      for (let run = 0; run < size.runs; run++) {
        const label = `poison ${run + 1}`;
        const deathsBefore = workers.reduce((sum, worker) => sum + worker.deaths(), 0);
        const threadId = await talk.newThread();
        const sent = await talk.send(threadId, `list departments (${MARKER})`);
        if (sent.status !== 201) throw new Error(`${label}: the run was not started: ${sent.status} ${sent.body.code ?? ''}`);
        const runId = sent.body.runId;
        runIds.push(runId);
        const ended = await awaitRun(stack.owner, runId, (row) => FINAL.includes(row.status), ENDS_WITHIN_MS);
        const deaths = workers.reduce((sum, worker) => sum + worker.deaths(), 0) - deathsBefore;
        console.log(`[${PHASE}] ${label}: ${ended ? `${ended.row.status} (${ended.row.error_code}) after ${ended.ms} ms and ${ended.row.attempts} attempts` : 'not ended'}; ${deaths} workers died`);
        check(ended !== undefined, `${label}: the run was still running ${ENDS_WITHIN_MS / 1000} s after it was sent (${deaths} workers died on it)`);
        if (!ended) continue;
        const code = ended.row.error_code;
        check(
          ended.row.status === 'failed' && (code === 'RUN_ABANDONED' || code === 'STEP_DEAD_LETTERED') && ended.row.error === ERROR_SENTENCES[code],
          `${label}: the run ended ${ended.row.status} (${code ?? 'no code'}), not failed with RUN_ABANDONED's or STEP_DEAD_LETTERED's sentence`,
        );
        check(deaths >= 1, `${label}: no worker died on the poison step, so the phase tested nothing`);
        const events = await storedEvents(stack.owner, runId);
        check(
          events.length === 1 && events[0]?.type === 'RUN_ERROR',
          `${label}: its stream holds ${events.map((event) => event.type).join(', ')}, not the server's RUN_ERROR alone`,
        );
        // The thread is free, and once the workers are back a harmless message on it completes.
        await Promise.all(workers.map((worker) => worker.ready()));
        const next = await talk.send(threadId, 'list campuses');
        check(next.status === 201, `${label}: the thread refused a new message after the run failed (${next.status} ${next.body.code ?? ''})`);
        if (next.status !== 201) continue;
        runIds.push(next.body.runId);
        const done = await awaitRun(stack.owner, next.body.runId, (row) => FINAL.includes(row.status), 30_000);
        check(done?.row.status === 'finished', `${label}: the next message on the thread did not complete (${done?.row.status ?? 'still running'})`);
      }
      await recordRunWrites(record, stack.owner, runIds);
    },
  );
};

describe(PHASE, () => {
  const target = usePhaseTarget({
    timeoutMs: 5_000,
    stack: {
      serverEnv: {
        AGENT_RUN_LEASE_SECONDS: String(LEASE_SECONDS),
        AGENT_RUN_SWEEP_INTERVAL_MS: String(SWEEP_MS),
        AGENT_RUN_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
      },
    },
  });
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
  });

  it(`a step that kills every worker: its run fails after ${MAX_ATTEMPTS} attempts with a sentence, the thread takes a new message`, async () => {
    const row = await poisonStepPhase(target, { runs: 2 });
    expectPassed(row);
  });

  it('fails with the attempts unbounded', async () => {
    await restartWeakened(target.stack, 'unbounded-attempts');
    const row = await poisonStepPhase({ ...target, weakening: 'unbounded-attempts' }, { runs: 1 });
    expectCaught(row, 'attempts unbounded');
    expect(row.failures.join('\n')).toMatch(/still running/);
  });
});
