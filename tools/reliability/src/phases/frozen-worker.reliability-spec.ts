import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  FINAL,
  awaitRun,
  conversationsOf,
  departmentsByName,
  expectCaught,
  expectPassed,
  holdTableLock,
  linesOf,
  recordRunWrites,
  restartWeakened,
  runPhase,
  runRow,
  sleep,
  storedEvents,
  usePhaseTarget,
  waitFor,
  workerIdOf,
  type PhaseRow,
  type PhaseTarget,
  type WorkerProcess,
} from '../support/index.js';

// A worker frozen mid-run (SIGSTOP) while a second worker takes its step over, then resumed (SIGCONT). The frozen
// worker's department creation is held inside its transaction (a lock on the table) when it is stopped; the write then
// commits, the lease it can no longer renew expires, the sweeper dispatches the step again under a new epoch, and the
// second worker claims it and completes the run from the checkpoint (the held write answered from the ledger). Then
// the first worker wakes with the step still in hand.
//
// The frozen worker here is a late talker (worker-preload.mjs, 'late-talker'): it keeps publishing whatever its lease
// says. A real worker checks its lease (its own clock, the renew's answer) before each event, but a freeze can land
// between that check and the publish after it; the preload stretches that window over the whole step, so every event
// the woken step still has is sent, and only the server can refuse them: the ingest stores an event only for the epoch
// its run is at, and execute() runs a call only for the current epoch with a live lease.
// The protections checked: one department, one audit row and one ledger row for the request (the reconciler), one
// RUN_FINISHED stored and nothing stored after it, and the woken worker's late events all refused (the server's log
// names each; at least one must have been sent, or the phase tested nothing).
//
// Sabotage: the server without fencing by epoch (weakened-server.mjs, 'no-fencing': execute()'s run-in-flight check
// ignores the token's epoch and the lease, the ingest stores any step's events): the woken worker's events are stored
// after the run finished.

const PHASE = 'frozen worker taken over';
const LEASE_SECONDS = 2;
const SWEEP_MS = 300;

// The late talker is kept across freezes (it takes seconds to start); a fresh second worker is started for each.
let talker: WorkerProcess | undefined;

export const frozenWorkerPhase = (target: PhaseTarget, size: { freezes: number }): Promise<PhaseRow> => {
  const runIds: string[] = [];
  return runPhase(
    PHASE,
    target,
    async ({ stack, record, check }) => {
      const talk = await conversationsOf(stack, 'admin@greenhill.school');
      const tag = randomUUID().slice(0, 8);
      for (let freeze = 0; freeze < size.freezes; freeze++) {
        const label = `freeze ${freeze + 1}`;
        // One step at a time, so the step dispatched again goes to the second worker, not into the frozen one's prefetch.
        talker ??= await stack.startWorker({ RUN_CONCURRENCY: '1' }, { preload: 'late-talker' });
        const frozen = talker;
        const threadId = await talk.newThread();
        const lock = await holdTableLock(stack, 'departments');
        let second: WorkerProcess | undefined;
        let runId: string;
        try {
          const sent = await talk.send(threadId, `create a department called Frozen ${tag} ${freeze}`);
          if (sent.status !== 201) throw new Error(`${label}: the run was not started: ${sent.status} ${sent.body.code ?? ''}`);
          runId = sent.body.runId;
          runIds.push(runId);
          await waitFor(async () => (await lock.waiters()) > 0, 30_000, `${label}: the write to wait inside its transaction`);
          const holder = (await runRow(stack.owner, runId))?.lease_worker;
          if (holder !== workerIdOf(frozen)) throw new Error(`${label}: the step is leased to ${holder}, not to the worker about to be frozen`);
          second = await stack.startWorker();
          frozen.child.kill('SIGSTOP');
        } finally {
          await lock.release();
        }
        const ended = await awaitRun(stack.owner, runId, (row) => FINAL.includes(row.status), 30_000);
        const before = await storedEvents(stack.owner, runId);
        frozen.child.kill('SIGCONT');
        check(ended?.row.status === 'finished' && ended.row.epoch >= 2, `${label}: the second worker did not complete the run (${ended?.row.status ?? 'not ended'} at epoch ${ended?.row.epoch})`);
        // The woken step goes on until it has nothing left to say (the consumer logs its end), then the ingest settles.
        await waitFor(() => frozen.output().includes(`Run ${runId} (start) finished`), 15_000, `${label}: the woken worker to end its step`).catch(() => undefined);
        await sleep(1_000);
        await second.stop('SIGKILL');

        const after = await storedEvents(stack.owner, runId);
        const finishes = after.filter((event) => event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR');
        check(finishes.length === 1, `${label}: ${finishes.length} RUN_FINISHED or RUN_ERROR events stored for one run`);
        const late = after.slice(before.length);
        check(late.length === 0, `${label}: ${late.length} events stored after the run finished (${late.map((event) => event.type).join(', ')})`);
        const refused = linesOf(stack.server().output(), new RegExp(`Run ${runId}: \\d+ events? \\(\\w+(\\.\\.\\w+)?\\) of epoch 1 refused`)).length;
        check(target.weakening !== undefined || refused > 0, `${label}: the woken worker sent no late event, so the phase tested nothing`);
        console.log(`[${PHASE}] ${label}: run finished at epoch ${ended?.row.epoch}; ${late.length} late events stored, ${refused} refused`);
      }
      await recordRunWrites(record, stack.owner, runIds);
    },
    { effects: departmentsByName(target.stack.owner) },
  );
};

describe(PHASE, () => {
  const target = usePhaseTarget({
    timeoutMs: 5_000,
    stack: {
      serverEnv: {
        AGENT_RUN_LEASE_SECONDS: String(LEASE_SECONDS),
        AGENT_RUN_SWEEP_INTERVAL_MS: String(SWEEP_MS),
        AGENT_RUN_MAX_ATTEMPTS: '5',
        // The ingest's refusals of the woken worker's events are warnings: counted from the server's output.
        LOG_LEVEL: 'warn',
      },
    },
  });

  it('a worker frozen mid-write while a second takes its step over, then woken: its late events refused, one department, one RUN_FINISHED', async () => {
    const row = await frozenWorkerPhase(target, { freezes: 2 });
    expectPassed(row);
  });

  it('fails without fencing by epoch', async () => {
    await restartWeakened(target.stack, 'no-fencing');
    const row = await frozenWorkerPhase({ ...target, weakening: 'no-fencing' }, { freezes: 1 });
    expectCaught(row, 'no fencing by epoch');
    expect(row.failures.join('\n')).toMatch(/stored after the run finished|RUN_ERROR events stored/);
  });
});
