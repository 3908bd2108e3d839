import { randomUUID } from 'node:crypto';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { describe, it } from 'vitest';
import {
  FINAL,
  awaitRun,
  conversationsOf,
  departmentsByName,
  expectCaught,
  expectPassed,
  holdTableLock,
  recordRunWrites,
  restartWeakened,
  runPhase,
  sleep,
  storedEvents,
  usePhaseTarget,
  waitFor,
  type PhaseRow,
  type PhaseTarget,
  type WorkerProcess,
} from '../support/index.js';

// A worker SIGKILLed mid-run with no other worker running. The run's step is a department creation held inside its
// transaction (a lock on the table) when the only worker is killed; the write then goes on and commits on the server.
// Nobody will ever finish that step, so only the server can end the run: the lease the worker held expires, the sweeper
// takes the step back and, past AGENT_RUN_MAX_ATTEMPTS, fails the run with its sentence (RUN_ABANDONED). The thread
// must take a new message within the lease plus a margin (AGENT_RUN_MAX_ATTEMPTS is 1 here: the first expiry ends it).
// Then the other way out: with attempts to spare (the server restarted with 10), a worker started after the kill
// takes the step over from its checkpoint and completes the run, the held write answered from the ledger (one
// department, one audit row), and the thread takes a new message once it has.
//
// Sabotage: the server without its sweeper (weakened-server.mjs, 'no-sweeper'): nothing takes back the dead
// worker's step, so its run stays running and its thread refuses every new message (409) past the deadline.

const PHASE = 'worker SIGKILLed mid-run';
const LEASE_SECONDS = 2;
const SWEEP_MS = 300;
/** What the lease allows, plus the sweep interval and a margin for a loaded machine. */
const FREE_WITHIN_MS = LEASE_SECONDS * 1000 + SWEEP_MS + 2_500;

// The worker left running by a phase, for the next to use (a worker takes seconds to start).
let spare: WorkerProcess | undefined;
const aWorker = async (target: PhaseTarget): Promise<WorkerProcess> => {
  const worker = spare ?? (await target.stack.startWorker());
  spare = undefined;
  return worker;
};

export const workerKillsPhase = (target: PhaseTarget, size: { abandoned: number; takenOver: boolean }): Promise<PhaseRow> => {
  const runIds: string[] = [];
  return runPhase(
    PHASE,
    target,
    async ({ stack, record, check }) => {
      const talk = await conversationsOf(stack, 'admin@greenhill.school');
      const tag = randomUUID().slice(0, 8);

      /** Starts a department creation, holds it inside its transaction, SIGKILLs the worker; the write then commits. */
      const killMidWrite = async (worker: WorkerProcess, name: string): Promise<{ threadId: string; runId: string; killedAt: number }> => {
        const threadId = await talk.newThread();
        const lock = await holdTableLock(stack, 'departments');
        try {
          const sent = await talk.send(threadId, `create a department called ${name}`);
          if (sent.status !== 201) throw new Error(`the run was not started: ${sent.status} ${sent.body.code ?? ''}`);
          runIds.push(sent.body.runId);
          await waitFor(async () => (await lock.waiters()) > 0, 30_000, 'the write to wait inside its transaction');
          await worker.stop('SIGKILL');
          return { threadId, runId: sent.body.runId, killedAt: Date.now() };
        } finally {
          await lock.release();
        }
      };

      /** Sends a new message until the thread takes one (the first 201), within `deadlineMs` of `since`; its run is cancelled at once. */
      const takesMessage = async (threadId: string, since: number, deadlineMs: number): Promise<number | undefined> => {
        while (Date.now() - since < deadlineMs) {
          const reply = await talk.send(threadId, 'list campuses');
          if (reply.status === 201) {
            const ms = Date.now() - since;
            runIds.push(reply.body.runId);
            await talk.cancel(threadId, reply.body.runId);
            return ms;
          }
          check(reply.status === 409, `a new message got ${reply.status} ${reply.body.code ?? ''} instead of 409 while the run held the thread`);
          await sleep(100);
        }
        return undefined;
      };

      for (let kill = 0; kill < size.abandoned; kill++) {
        const { threadId, runId, killedAt } = await killMidWrite(await aWorker(target), `Killed ${tag} ${kill}`);
        const freeMs = await takesMessage(threadId, killedAt, FREE_WITHIN_MS + 2_000);
        check(
          freeMs !== undefined && freeMs <= FREE_WITHIN_MS,
          freeMs === undefined
            ? `kill ${kill + 1}: the thread took no new message within ${(FREE_WITHIN_MS + 2_000) / 1000} s of the kill`
            : `kill ${kill + 1}: the thread took a new message ${freeMs} ms after the kill (allowed ${FREE_WITHIN_MS})`,
        );
        console.log(`[${PHASE}] kill ${kill + 1}: thread free ${freeMs ?? 'never'} ms after the kill (allowed ${FREE_WITHIN_MS})`);
        const ended = await awaitRun(stack.owner, runId, (row) => FINAL.includes(row.status), 5_000);
        check(
          ended?.row.status === 'failed' && ended.row.error_code === 'RUN_ABANDONED' && ended.row.error === ERROR_SENTENCES.RUN_ABANDONED,
          `kill ${kill + 1}: the run ended ${ended?.row.status ?? 'never'} (${ended?.row.error_code ?? 'no code'}), not failed with RUN_ABANDONED's sentence`,
        );
        const last = (await storedEvents(stack.owner, runId)).at(-1)?.payload;
        check(last?.type === 'RUN_ERROR' && last.code === 'RUN_ABANDONED', `kill ${kill + 1}: the stream did not end with RUN_ERROR RUN_ABANDONED (${last?.type})`);
      }

      if (size.takenOver) {
        // Attempts to spare: the step is dispatched again until a worker takes it.
        await stack.server().stop();
        await stack.startServer({ extraEnv: { AGENT_RUN_MAX_ATTEMPTS: '10' } });
        const name = `Taken over ${tag}`;
        const { threadId, runId, killedAt } = await killMidWrite(await aWorker(target), name);
        const later = await stack.startWorker();
        spare = later;
        const ended = await awaitRun(stack.owner, runId, (row) => FINAL.includes(row.status), 60_000);
        check(ended?.row.status === 'finished', `the run was not completed by the worker started after the kill (${ended?.row.status ?? 'still running'} after 60 s)`);
        console.log(`[${PHASE}] taken over: run finished ${Date.now() - killedAt} ms after the kill, on attempt ${ended?.row.attempts}`);
        const events = await storedEvents(stack.owner, runId);
        check(events.filter((event) => event.type === 'RUN_FINISHED').length === 1 && events.at(-1)?.type === 'RUN_FINISHED', 'the taken-over run did not end with exactly one RUN_FINISHED');
        const freeMs = await takesMessage(threadId, Date.now(), 5_000);
        check(freeMs !== undefined, 'the thread took no new message after the taken-over run finished');
      }
      await recordRunWrites(record, stack.owner, runIds);
    },
    { effects: departmentsByName(target.stack.owner) },
  );
};

describe(PHASE, () => {
  const target = usePhaseTarget({
    timeoutMs: 5_000,
    stack: { serverEnv: { AGENT_RUN_LEASE_SECONDS: String(LEASE_SECONDS), AGENT_RUN_SWEEP_INTERVAL_MS: String(SWEEP_MS), AGENT_RUN_MAX_ATTEMPTS: '1' } },
  });

  it('the only worker SIGKILLed mid-write: the run fails with RUN_ABANDONED and the thread takes a new message within the lease + margin; with attempts to spare, a worker started later completes it, each write once', async () => {
    const row = await workerKillsPhase(target, { abandoned: 1, takenOver: true });
    expectPassed(row);
  });

  it('fails without the sweeper', async () => {
    await restartWeakened(target.stack, 'no-sweeper');
    const row = await workerKillsPhase({ ...target, weakening: 'no-sweeper' }, { abandoned: 1, takenOver: false });
    expectCaught(row, 'no sweeper');
  });
});
