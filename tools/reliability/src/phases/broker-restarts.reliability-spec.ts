import { randomUUID } from 'node:crypto';
import { createDepartmentTool, listDepartmentsTool, updateSchoolBrandingTool } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import {
  converse,
  createToolCaller,
  departmentsByName,
  expectCaught,
  expectPassed,
  holdTableLock,
  restartWeakened,
  runPhase,
  sleep,
  stepSucceeded,
  usePhaseTarget,
  waitFor,
  withWeakenedCaller,
  type CallOutcome,
  type PhaseRow,
  type PhaseTarget,
} from '../support/index.js';

// Broker restarts under load. The broker path of the server, the worker process and the caller goes through the fault
// proxy; a restart is every connection dropped and new ones refused for a few seconds (the shared broker itself is
// never restarted: other suites use it). Meanwhile lanes of writes and reads keep calling as the worker does, and at
// each restart two branding updates are held inside their transactions (a table lock) when the broker goes: the
// server's transport does not abort a running handler when its channel dies, so the broker redelivers those calls
// while their first run is still going, and the worker sends them again as well.
// The protections, from issues 7 (part 4) and 26: the server and the worker reconnect by themselves; a call the
// outage interrupts, or made during it, is sent again unchanged once the connection is back and answered within its
// deadline (the worker's default 15 s), so at most 1 % of calls end "outcome unknown" (before issue 26 a third did,
// under a 3 s timeout); no call hangs (p100 <= timeout + 1 s), and nothing is answered during the outage; a call after
// it works again within 10 s, and so does a whole conversation step through the server, the runs queue and the worker
// process; and no write is lost, duplicated or a ghost across the restarts, the redelivered and re-sent ones included.
//
// Sabotage: the server without its idempotency ledger (weakened-server.mjs, 'no-ledger'): a redelivered branding
// update runs a second time and writes a second audit row for the same call. And the caller re-sending a lost call
// under a new call id each time (caller.ts, 'new-call-id-per-resend'): the held branding updates, committed once the
// lock goes, run again under their new ids (two ledger and audit rows for one call).

const PHASE = 'broker restarts';
const BACK_WITHIN_MS = 10_000;

export const brokerRestartsPhase = (target: PhaseTarget, size: { restarts: number; outageMs: number; lanes: number }): Promise<PhaseRow> =>
  runPhase(
    PHASE,
    target,
    async ({ stack, caller, record, check }) => {
      const context = await stack.contextFor('admin@greenhill.school');
      const token = await stack.login('admin@greenhill.school');
      const tag = randomUUID().slice(0, 8);
      // The held updates get the lanes' deadline, weakened as the lanes' caller is for a sabotage test.
      const patient = await createToolCaller({
        brokerUrl: stack.workerBrokerUrl,
        toolsQueue: stack.toolsQueue,
        timeoutMs: caller.timeoutMs,
        ...(target.callerWeakening ? { weakening: target.callerWeakening } : {}),
      });
      const seen: (CallOutcome & { endedAt: number })[] = [];
      let hung = 0;
      // A call that outlives its promise by 5 s is abandoned and counted as hung.
      const guarded = async (call: Promise<CallOutcome>) => {
        const limit = sleep(caller.timeoutMs + 5_000).then(() => undefined);
        const outcome = await Promise.race([call, limit]);
        if (!outcome) hung += 1;
        else seen.push({ ...record(outcome), endedAt: Date.now() });
        return outcome;
      };

      let loading = true;
      let serial = 0;
      const lane = async () => {
        while (loading) {
          const index = serial++;
          const name = `Broker ${tag} ${index}`;
          const outcome =
            index % 2 === 0
              ? await guarded(caller.call(createDepartmentTool, { name }, context).then((result) => ({ ...result, effectKey: name })))
              : await guarded(caller.call(listDepartmentsTool, {}, context));
          // A failing call returns at once while the client is disconnected: do not spin.
          if (outcome?.kind !== 'ok') await sleep(100);
          if (!outcome) return;
        }
      };
      const lanes = Array.from({ length: size.lanes }, lane);
      await sleep(1_000);

      // One restart with two branding updates held inside their transactions. The lock is released whatever fails, so
      // that it cannot block the next test's branding calls, and a failed wait says what the held calls got.
      const restartOnce = async (restart: number) => {
        const lock = await holdTableLock(stack, 'school_branding');
        try {
          const heldOutcomes: (CallOutcome | undefined)[] = [];
          const held = [0, 1].map((index) =>
            guarded(patient.call(updateSchoolBrandingTool, { motto: `Held ${tag} ${restart}-${index}` }, context)).then((outcome) => {
              heldOutcomes[index] = outcome;
              return outcome;
            }),
          );
          // A precondition, not the protection under test: after two outages the server's and the caller's connections
          // may take a while to settle on a loaded machine (CI saw 10 s missed at the third restart).
          await waitFor(async () => (await lock.waiters()) >= 2, 20_000, 'branding updates waiting inside their transactions').catch(
            async (error: Error) => {
              const answers = [0, 1].map((index) => {
                const outcome = heldOutcomes[index];
                return outcome ? `${outcome.kind}${outcome.error ? ` (${outcome.error})` : ''}` : 'no answer yet';
              });
              throw new Error(`restart ${restart}: ${error.message}; waiting now: ${await lock.waiters()}; the held calls: ${answers.join(', ')}`);
            },
          );
          const down = Date.now();
          await stack.broker.outage(size.outageMs);
          const up = Date.now();
          const callBack = await waitFor(
            async () => (await guarded(caller.call(listDepartmentsTool, {}, context)))?.kind === 'ok',
            BACK_WITHIN_MS,
          ).catch(() => undefined);
          // A call now waits for the connection within its deadline, so one that answers can still be late: timed here.
          check(
            callBack !== undefined && Date.now() - up <= BACK_WITHIN_MS,
            `restart ${restart}: no call worked within ${BACK_WITHIN_MS / 1000} s of the broker coming back`,
          );
          let conversed = false;
          while (!conversed && Date.now() - up < BACK_WITHIN_MS) {
            conversed = await converse(stack.server().baseUrl, token, 'list departments', BACK_WITHIN_MS - (Date.now() - up)).then(stepSucceeded, () => false);
            if (!conversed) await sleep(200);
          }
          check(conversed, `restart ${restart}: no conversation step through the worker finished within ${BACK_WITHIN_MS / 1000} s of the broker coming back`);
          // The redelivered updates have reached the server again by now; the first runs finish once the lock goes, then
          // the redelivered ones.
          await lock.release();
          await Promise.all(held);
          await waitFor(async () => Number((await stack.owner.query(`SELECT count(*) FROM pg_locks WHERE NOT granted`)).rows[0].count) === 0);
          await sleep(300);
          const during = seen.filter((outcome) => outcome.endedAt - outcome.ms >= down && outcome.endedAt <= up);
          const answered = during.filter((outcome) => outcome.kind !== 'unknown');
          check(answered.length === 0, `restart ${restart}: ${answered.length} calls made and ended during the outage did not get the infrastructure sentence`);
        } finally {
          await lock.release();
        }
      };

      try {
        for (let restart = 1; restart <= size.restarts; restart++) {
          await restartOnce(restart);
          await sleep(1_000);
        }
      } finally {
        // Lanes left running would load the next test.
        loading = false;
      }
      await Promise.all(lanes);
      await patient.close();
      check(hung === 0, `${hung} calls hung (no answer within the timeout + 5 s)`);
      const late = seen.filter((outcome) => outcome.ms > caller.timeoutMs + 1_000);
      check(late.length === 0, `${late.length} calls took longer than the timeout + 1 s (slowest ${Math.max(0, ...late.map((outcome) => outcome.ms))} ms)`);
    },
    { effects: departmentsByName(target.stack.owner), maxUnknownShare: 0.01 },
  );

describe(PHASE, () => {
  // The worker's default tool call timeout: an outage of a few seconds is settled by the platform within it.
  const target = usePhaseTarget({ timeoutMs: 15_000, worker: true });

  it('3 broker restarts under load: interrupted calls sent again and answered (at most 1 % unknown), calls and a conversation work again within 10 s', async () => {
    const row = await brokerRestartsPhase(target, { restarts: 3, outageMs: 3_000, lanes: 6 });
    expectPassed(row);
  });

  it('fails when a lost call is sent again under a new call id', async () => {
    const row = await withWeakenedCaller(target, 'new-call-id-per-resend', (weakened) => brokerRestartsPhase(weakened, { restarts: 1, outageMs: 2_000, lanes: 2 }));
    expectCaught(row, 're-sent under a new call id');
    expect(row.duplicated).toBeGreaterThan(0);
  });

  it('fails with the idempotency ledger switched off', async () => {
    await restartWeakened(target.stack, 'no-ledger');
    const row = await brokerRestartsPhase({ ...target, weakening: 'no-ledger' }, { restarts: 1, outageMs: 2_000, lanes: 2 });
    expectCaught(row, 'no idempotency ledger');
    expect(row.duplicated).toBeGreaterThan(0);
  });
});
