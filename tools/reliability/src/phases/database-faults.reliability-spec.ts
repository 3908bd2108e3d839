import { randomUUID } from 'node:crypto';
import { listLessonPlansTool } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import {
  expectCaught,
  expectPassed,
  holdTableLock,
  lessonPlanWrites,
  lessonPlansByTitle,
  resolveUnknowns,
  restartWeakened,
  runPhase,
  sleep,
  usePhaseTarget,
  waitFor,
  withWeakenedCaller,
  type CallOutcome,
  type PhaseContext,
  type PhaseRow,
  type PhaseTarget,
} from '../support/index.js';

// Database faults under audited writes (lesson plans: support/lesson-plan-writes.ts), each kind several times, the server reaching PostgreSQL through the fault
// proxy:
// - cut mid-transaction: the writes wait on a table lock inside their transactions when every connection drops;
// - unreachable: connections drop and new ones are refused for two seconds while writes arrive;
// - COMMIT lost: the connection drops before the write's COMMIT reaches the database (it rolls back);
// - answer to COMMIT lost: the COMMIT reaches the database and commits, the connection drops before its answer, so
//   the server cannot know: it answers "outcome unknown", never "failed";
// - backend terminated: pg_terminate_backend on the server's sessions while they wait inside their transactions.
// The protections: one transaction per call holding the write, its audit row and its ledger row (no partial write,
// no audit row without its effect); a commit the server could not confirm settled by the platform, not the model (the
// worker sends the call again, and the ledger answers it if it committed, or it runs once if it did not: at most 1 %
// of calls end "outcome unknown", and get_tool_call_outcome agrees with the database on any that do); masked errors;
// and a pool that recovers: a call after each fault works again within 5 s.
//
// Sabotage: the same server with the audit row written on its own connection, outside the call's transaction
// (weakened-server.mjs, 'audit-outside-transaction'): a lost COMMIT then leaves an audit row for a write that never
// happened, and once the call is sent again and runs, a second audit row for one call. And the caller sending an
// unconfirmed commit again under a new call id (caller.ts, 'new-call-id-per-resend'): the ledger cannot recognise it,
// so a lesson plan that did commit is submitted a second time (two plans with one title: duplicated).

const PHASE = 'database faults';
const RECOVERY_MS = 5_000;
const LEDGER_WRITE = /INSERT INTO "?tool_call_ledger/i;

export type DatabaseFault = 'cut mid-transaction' | 'unreachable' | 'COMMIT lost' | 'answer to COMMIT lost' | 'backend terminated';
export const DATABASE_FAULTS: readonly DatabaseFault[] = ['cut mid-transaction', 'unreachable', 'COMMIT lost', 'answer to COMMIT lost', 'backend terminated'];

type Writes = (count: number) => Promise<CallOutcome>[];

const inject: Record<DatabaseFault, (phase: PhaseContext, writes: Writes) => Promise<CallOutcome[]>> = {
  'cut mid-transaction': async ({ stack }, writes) => {
    const lock = await holdTableLock(stack, 'lesson_plans');
    const calls = writes(4);
    await waitFor(async () => (await lock.waiters()) >= 4, 10_000, 'writes waiting inside their transactions');
    stack.database.cutAll();
    await lock.release();
    return Promise.all(calls);
  },
  unreachable: async ({ stack }, writes) => {
    const up = stack.database.down();
    const calls = writes(4);
    await sleep(2_000);
    up();
    return Promise.all(calls);
  },
  'COMMIT lost': async ({ stack }, writes) => {
    const fired = stack.database.cutAtCommit(LEDGER_WRITE, { commits: false });
    const outcomes = await Promise.all(writes(1));
    await fired;
    return outcomes;
  },
  'answer to COMMIT lost': async ({ stack }, writes) => {
    const fired = stack.database.cutAtCommit(LEDGER_WRITE, { commits: true });
    const outcomes = await Promise.all(writes(1));
    await fired;
    return outcomes;
  },
  'backend terminated': async ({ stack }, writes) => {
    const lock = await holdTableLock(stack, 'lesson_plans');
    const calls = writes(4);
    await waitFor(async () => (await lock.waiters()) >= 4, 10_000, 'writes waiting inside their transactions');
    await stack.owner.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`,
    );
    await lock.release();
    return Promise.all(calls);
  },
};

export const databaseFaultsPhase = (target: PhaseTarget, size: { rounds: number; faults?: readonly DatabaseFault[] }): Promise<PhaseRow> => {
  const effects = lessonPlansByTitle(target.stack.owner);
  return runPhase(
    PHASE,
    target,
    async (phase) => {
      const { stack, caller, record, check } = phase;
      const plans = await lessonPlanWrites(stack, caller, record);
      const tag = randomUUID().slice(0, 8);
      const all: CallOutcome[] = [];
      let serial = 0;
      const writes: Writes = (count) => Array.from({ length: count }, () => plans.write(`Db ${tag} ${serial++}`));
      for (let round = 0; round < size.rounds; round++) {
        for (const fault of size.faults ?? DATABASE_FAULTS) {
          const outcomes = await inject[fault](phase, writes);
          all.push(...outcomes);
          if (fault === 'answer to COMMIT lost' || fault === 'COMMIT lost') {
            // Unconfirmed either way: sent again, it is answered from the ledger (committed) or runs once (not).
            check(
              outcomes.every((outcome) => outcome.kind === 'ok'),
              `${fault}: a commit the server could not confirm ended ${outcomes.map((outcome) => outcome.kind).join(', ')}, not settled as done`,
            );
          }
          // The pool finds its way back: a call works again within RECOVERY_MS of the fault's end.
          const recovery = await waitFor(
            async () => (await caller.call(listLessonPlansTool, {}, plans.context)).kind === 'ok',
            RECOVERY_MS,
            `${fault}: recovery`,
          ).catch(() => undefined);
          check(recovery !== undefined, `${fault}: no call worked within ${RECOVERY_MS / 1000} s of the fault's end`);
        }
      }
      const { disagreements } = await resolveUnknowns({ caller, context: plans.context, outcomes: all, effects });
      for (const disagreement of disagreements) check(false, disagreement);
    },
    { effects, maxUnknownShare: 0.01 },
  );
};

describe(PHASE, () => {
  // A small pool, so a fault reaches every connection the server has. The worker's default deadline (15 s), as in
  // production: the unknowns this phase counts are those a real call would end with (audited writes: why).
  const target = usePhaseTarget({ timeoutMs: 15_000, stack: { poolSize: 4 } });

  it('5 kinds of database fault, 4 rounds: no partial write, no audit row without its effect, unconfirmed commits settled by sending again (at most 1 % unknown)', async () => {
    const row = await databaseFaultsPhase(target, { rounds: 4 });
    expectPassed(row);
  });

  it('fails when an unconfirmed commit is sent again under a new call id', async () => {
    const row = await withWeakenedCaller(target, 'new-call-id-per-resend', (weakened) =>
      databaseFaultsPhase(weakened, { rounds: 2, faults: ['answer to COMMIT lost'] }),
    );
    expectCaught(row, 're-sent under a new call id');
    expect(row.duplicated).toBeGreaterThan(0);
  });

  it('fails with the audit row written outside the call transaction', async () => {
    await restartWeakened(target.stack, 'audit-outside-transaction');
    const row = await databaseFaultsPhase({ ...target, weakening: 'audit-outside-transaction' }, { rounds: 2, faults: ['COMMIT lost'] });
    expectCaught(row, 'audit outside the transaction');
    expect(row.unexpected + row.duplicated).toBeGreaterThan(0);
  });
});
