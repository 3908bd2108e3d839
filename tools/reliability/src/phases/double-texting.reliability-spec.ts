import type { MultitaskStrategy } from '@naalya/agent-tools';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import {
  FINAL,
  conversationsOf,
  expectCaught,
  expectPassed,
  recordRunWrites,
  restartWeakened,
  runPhase,
  sleep,
  usePhaseTarget,
  waitFor,
  type PhaseRow,
  type PhaseTarget,
} from '../support/index.js';

// Double-texting under concurrency. On a few threads at once, bursts of messages are posted concurrently, each with a
// multitask strategy in turn (reject, enqueue, interrupt), while a sampler reads agent_runs every few milliseconds.
// The protections: never two runs active (running or waiting on a question) on one thread, in any sample; the
// stored events of a thread's runs never overlap in time; queued runs start in the order they were queued (their
// creation, as the server orders them); every answer is one the contract allows (201 running or queued, 409
// RUN_IN_PROGRESS for reject, 429 RUN_QUEUE_FULL past the per-thread bound); every accepted run ends, finished or
// cancelled, and the thread then takes a new message. The thread's row lock serialises starts, and the partial unique
// index (one active run per thread) is the floor under it.
//
// Sabotage: both switched off (weakened-server.mjs, 'no-thread-lock': the thread read without its lock, and the index
// dropped from the phase's database): concurrent messages each find the thread free, and several runs are active at
// once.

const PHASE = 'double-texting under concurrency';
const STRATEGIES: readonly MultitaskStrategy[] = ['enqueue', 'reject', 'interrupt', 'enqueue', 'reject', 'enqueue'];
/** Small, so bursts meet the bound. */
const QUEUE_LIMIT = 3;
const MESSAGES = ['list campuses', 'list subjects', 'list departments', 'show the staff'];
const ALLOWED: Record<MultitaskStrategy, readonly string[]> = {
  reject: ['201 running', '409 RUN_IN_PROGRESS'],
  enqueue: ['201 running', '201 queued', '429 RUN_QUEUE_FULL'],
  interrupt: ['201 running'],
};

type Size = { threads: number; waves: number; burst: number };

export const doubleTextingPhase = (target: PhaseTarget, size: Size): Promise<PhaseRow> => {
  const runIds: string[] = [];
  const queuedRunIds: string[] = [];
  return runPhase(PHASE, target, async ({ stack, record, check }) => {
    const talk = await conversationsOf(stack, 'admin@greenhill.school');
    const threadIds = await Promise.all(Array.from({ length: size.threads }, () => talk.newThread()));

    // The sampler: never two active runs on a thread.
    const sampler = new pg.Client({ connectionString: stack.env['DATABASE_OWNER_URL'] });
    await sampler.connect();
    let sampling = true;
    let samples = 0;
    let overlapping = 0;
    const overlaps: string[] = [];
    const sampling$ = (async () => {
      while (sampling) {
        const { rows } = await sampler.query<{ thread_id: string; n: number; statuses: string[] }>(
          `SELECT thread_id, count(*)::int AS n, array_agg(status) AS statuses FROM agent_runs
            WHERE thread_id = ANY($1::uuid[]) AND status IN ('running', 'interrupted') GROUP BY thread_id HAVING count(*) > 1`,
          [threadIds],
        );
        samples += 1;
        if (rows.length > 0) overlapping += 1;
        for (const row of rows) overlaps.push(`${row.n} active runs on thread ${row.thread_id.slice(0, 8)} (${row.statuses.join(', ')})`);
        await sleep(10);
      }
    })();

    const answers = new Map<string, number>();
    try {
      for (let wave = 0; wave < size.waves; wave++) {
        await Promise.all(
          threadIds.map((threadId, thread) =>
            Promise.all(
              Array.from({ length: size.burst }, async (_, index) => {
                const strategy = STRATEGIES[(index + wave + thread) % STRATEGIES.length] as MultitaskStrategy;
                const reply = await talk.send(threadId, MESSAGES[index % MESSAGES.length] as string, strategy);
                const answer = reply.status === 201 ? `201 ${reply.body.status}` : `${reply.status} ${reply.body.code ?? ''}`;
                answers.set(`${strategy} ${answer}`, (answers.get(`${strategy} ${answer}`) ?? 0) + 1);
                check(ALLOWED[strategy].includes(answer), `${strategy}: answered ${answer}`);
                if (reply.status === 201) runIds.push(reply.body.runId);
                if (reply.status === 201 && reply.body.status === 'queued') queuedRunIds.push(reply.body.runId);
              }),
            ),
          ),
        );
        // Every accepted run ends: each queued one is started in turn, each interrupted one is cancelled.
        await waitFor(
          async () =>
            Number(
              (await stack.owner.query<{ n: string }>(`SELECT count(*) AS n FROM agent_runs WHERE thread_id = ANY($1::uuid[]) AND NOT (status = ANY($2))`, [threadIds, FINAL]))
                .rows[0]?.n,
            ) === 0,
          60_000,
          `wave ${wave + 1}: every accepted run to end`,
        ).catch((error: Error) => check(false, error.message));
      }
    } finally {
      sampling = false;
      await sampling$;
      await sampler.end();
    }
    check(overlapping === 0, `${overlapping} samples of ${samples} saw two runs active on one thread: ${[...new Set(overlaps)].slice(0, 3).join('; ')}`);

    // What the stored events say: each thread's runs, one after another, queued ones in their order.
    const { rows: runs } = await stack.owner.query<{
      id: string;
      thread_id: string;
      status: string;
      queued: boolean;
      first_at: Date | null;
      last_at: Date | null;
    }>(
      `SELECT r.id, r.thread_id, r.status,
              r.id = ANY($2::uuid[]) AS queued,
              (SELECT min(e.created_at) FROM agent_run_events e WHERE e.run_id = r.id) AS first_at,
              (SELECT max(e.created_at) FROM agent_run_events e WHERE e.run_id = r.id) AS last_at
         FROM agent_runs r WHERE r.thread_id = ANY($1::uuid[]) ORDER BY r.thread_id, r.created_at, r.id`,
      [threadIds, queuedRunIds],
    );
    const failed = runs.filter((run) => run.status !== 'finished' && run.status !== 'cancelled');
    check(failed.length === 0, `${failed.length} runs ended ${[...new Set(failed.map((run) => run.status))].join(', ')} instead of finished or cancelled`);
    for (const threadId of threadIds) {
      const ofThread = runs.filter((run) => run.thread_id === threadId && run.first_at && run.last_at);
      const byStart = [...ofThread].sort((a, b) => (a.first_at as Date).getTime() - (b.first_at as Date).getTime());
      for (let index = 1; index < byStart.length; index++) {
        const before = byStart[index - 1];
        const after = byStart[index];
        if (before && after && (after.first_at as Date) < (before.last_at as Date)) {
          check(false, `thread ${threadId.slice(0, 8)}: run ${after.id.slice(0, 8)} stored events while run ${before.id.slice(0, 8)} was still storing its own`);
          break;
        }
      }
      // Creation order is the queue's order (the server starts the oldest queued run first).
      const queued = ofThread.filter((run) => run.queued);
      for (let index = 1; index < queued.length; index++) {
        const before = queued[index - 1];
        const after = queued[index];
        if (before && after && (after.first_at as Date) < (before.first_at as Date)) {
          check(false, `thread ${threadId.slice(0, 8)}: queued run ${after.id.slice(0, 8)} started before ${before.id.slice(0, 8)}, queued earlier`);
          break;
        }
      }
      const next = await talk.send(threadId, 'list campuses');
      check(next.status === 201, `thread ${threadId.slice(0, 8)}: refused a new message after its runs ended (${next.status} ${next.body.code ?? ''})`);
      if (next.status === 201) {
        runIds.push(next.body.runId);
        await talk.cancel(threadId, next.body.runId);
      }
    }
    console.log(`[${PHASE}] ${samples} samples; answers: ${[...answers].map(([answer, n]) => `${answer} x${n}`).join(', ')}`);
    await recordRunWrites(record, stack.owner, runIds);
  });
};

describe(PHASE, () => {
  const target = usePhaseTarget({ timeoutMs: 5_000, worker: true, stack: { serverEnv: { AGENT_RUN_LEASE_SECONDS: '3', AGENT_RUN_QUEUE_LIMIT: String(QUEUE_LIMIT) } } });

  it('bursts of concurrent messages on threads with each strategy: never two runs active on a thread, queued runs in order, every run ends', async () => {
    const row = await doubleTextingPhase(target, { threads: 3, waves: 3, burst: 10 });
    expectPassed(row);
  });

  it("fails without the thread's lock and the one-active-run index", async () => {
    await restartWeakened(target.stack, 'no-thread-lock');
    const row = await doubleTextingPhase({ ...target, weakening: 'no-thread-lock' }, { threads: 2, waves: 1, burst: 6 });
    expectCaught(row, 'no thread lock, no one-active-run index');
    expect(row.failures.join('\n')).toMatch(/two runs active|still storing/);
  });
});
