import { randomUUID } from 'node:crypto';
import { createDepartmentTool, type CancelRunResponse } from '@naalya/agent-tools';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
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
  type Reply,
} from '../support/index.js';

// Cancel during a slow write. Each round a conversation's department creation is held (a lock on the table) while its
// run is cancelled, in turn: the cancel sent while the write waits inside its transaction and the lock released after
// it; the lock released and the cancel sent at once; the lock released just before the cancel; the cancel sent the
// moment the run starts, racing the worker's call to the server. What the user is told must be what stays: once the
// cancel has answered, the write is either committed, present and listed in its committedWrites (with its audit id),
// or absent for good; nothing appears after the answer, and the run's stream ends with its one RUN_FINISHED
// (cancelled), the worker's own ending refused. The protection is execute()'s lookup of the run under a KEY SHARE
// lock held until the call's transaction ends, which the cancel's row lock waits for.
//
// Sabotage: that lookup made on a connection of its own, holding nothing in the call's transaction
// (weakened-server.mjs, 'unlocked-run-check'): the cancel answers while the write waits, and the write lands after.

const PHASE = 'cancel during a slow write';
const VARIANTS = ['cancel, then release', 'release and cancel together', 'release, then cancel', 'cancel at once'] as const;

type Snapshot = { departments: number; ledger: number; events: number };

export const cancelWritesPhase = (target: PhaseTarget, size: { rounds: number }): Promise<PhaseRow> => {
  const runIds: string[] = [];
  return runPhase(
    PHASE,
    target,
    async ({ stack, record, check }) => {
      const talk = await conversationsOf(stack, 'admin@greenhill.school');
      const tag = randomUUID().slice(0, 8);
      // Its own connection: the moment of the cancel's answer must not queue behind the owner's other queries.
      const probe = new pg.Client({ connectionString: stack.env['DATABASE_OWNER_URL'] });
      await probe.connect();
      const snapshot = async (name: string, runId: string): Promise<Snapshot> => {
        const { rows } = await probe.query<{ departments: number; ledger: number; events: number }>(
          `SELECT (SELECT count(*)::int FROM departments WHERE name = $1) AS departments,
                  (SELECT count(*)::int FROM tool_call_ledger WHERE run_id = $2) AS ledger,
                  (SELECT count(*)::int FROM agent_run_events WHERE run_id = $2) AS events`,
          [name, runId],
        );
        return rows[0] as Snapshot;
      };
      const counts = { listed: 0, absent: 0, finishedFirst: 0 };
      try {
        for (let round = 0; round < size.rounds; round++) {
          const variant = VARIANTS[round % VARIANTS.length];
          const label = `round ${round + 1} (${variant})`;
          const name = `Cancel ${tag} ${round}`;
          const threadId = await talk.newThread();
          const lock = await holdTableLock(stack, 'departments');
          let answer: { reply: Reply<CancelRunResponse>; at: Snapshot } | undefined;
          let runId = '';
          try {
            const sent = await talk.send(threadId, `create a department called ${name}`);
            if (sent.status !== 201) throw new Error(`${label}: the run was not started: ${sent.status} ${sent.body.code ?? ''}`);
            runId = sent.body.runId;
            runIds.push(runId);
            const cancel = () =>
              talk.cancel(threadId, runId).then(async (reply) => {
                answer = { reply, at: await snapshot(name, runId) };
              });
            if (variant === 'cancel at once') {
              const cancelling = cancel();
              await Promise.race([cancelling, sleep(500)]);
              await lock.release();
              await cancelling;
            } else {
              await waitFor(async () => (await lock.waiters()) > 0, 30_000, `${label}: the write to wait inside its transaction`);
              if (variant === 'cancel, then release') {
                const cancelling = cancel();
                // Long enough for the cancel to queue behind the write (or, unprotected, to answer).
                await Promise.race([cancelling, sleep(300)]);
                await lock.release();
                await cancelling;
              } else if (variant === 'release and cancel together') {
                await Promise.all([lock.release(), cancel()]);
              } else {
                await lock.release();
                await cancel();
              }
            }
          } finally {
            await lock.release();
          }
          if (!answer) throw new Error(`${label}: no answer to the cancel`);
          const { reply, at } = answer;
          check(reply.status === 200, `${label}: the cancel answered ${reply.status} ${reply.body.code ?? ''}`);
          // Whatever is still on its way (the held write, the worker's events) has arrived by now.
          await sleep(1_000);
          const later = await snapshot(name, runId);
          check(
            later.departments <= at.departments && later.ledger <= at.ledger,
            `${label}: a write landed after the cancel answered (${at.departments} -> ${later.departments} departments)`,
          );
          check(later.events === at.events, `${label}: ${later.events - at.events} events were stored after the cancel answered`);
          if (reply.body.cancelled) {
            const listed = reply.body.committedWrites.filter((write) => write.event === createDepartmentTool.event);
            check(
              listed.length === later.ledger && listed.length === later.departments && listed.every((write) => write.auditId !== null),
              `${label}: ${later.departments} departments stayed, ${listed.length} listed in committedWrites`,
            );
            const events = await storedEvents(stack.owner, runId);
            const finishes = events.filter((event) => event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR');
            const last = events.at(-1)?.payload;
            check(
              finishes.length === 1 && last?.type === 'RUN_FINISHED' && last.outcome.type === 'cancelled',
              `${label}: the stream ended with ${finishes.map((event) => event.type).join(', ')}, not its one RUN_FINISHED cancelled`,
            );
            if (later.departments > 0) counts.listed += 1;
            else counts.absent += 1;
          } else {
            // The run finished before the cancel reached it: the write was reported in its stream.
            check(reply.body.status === 'finished', `${label}: nothing was cancelled, yet the run is ${reply.body.status}`);
            counts.finishedFirst += 1;
          }
        }
      } finally {
        await probe.end();
      }
      console.log(`[${PHASE}] ${counts.listed} writes stayed and were listed, ${counts.absent} never happened, ${counts.finishedFirst} runs finished before their cancel`);
      await recordRunWrites(record, stack.owner, runIds);
    },
    { effects: departmentsByName(target.stack.owner) },
  );
};

describe(PHASE, () => {
  const target = usePhaseTarget({ timeoutMs: 5_000, worker: true, stack: { serverEnv: { AGENT_RUN_LEASE_SECONDS: '3' } } });

  it('runs cancelled around a held write, four ways: each write committed and listed, or absent; nothing lands after the answer', async () => {
    const row = await cancelWritesPhase(target, { rounds: 8 });
    expectPassed(row);
  });

  it("fails when execute() holds no lock on the run's row", async () => {
    await restartWeakened(target.stack, 'unlocked-run-check');
    const row = await cancelWritesPhase({ ...target, weakening: 'unlocked-run-check' }, { rounds: 2 });
    expectCaught(row, 'run check without a row lock');
    expect(row.failures.join('\n')).toMatch(/landed after the cancel answered/);
  });
});
