import { randomUUID } from 'node:crypto';
import { createDepartmentTool } from '@naalya/agent-tools';
import { describe, it } from 'vitest';
import {
  createToolCaller,
  departmentsByName,
  expectCaught,
  expectPassed,
  holdTableLock,
  runPhase,
  sleep,
  usePhaseTarget,
  waitFor,
  type PhaseRow,
  type PhaseTarget,
} from '../support/index.js';

// Server SIGKILLs mid-call: a batch of writes is in flight when the server process is killed, then a new one starts.
// Every other kill lands while the writes wait inside their transactions (a table lock holds them there); the others
// land a few milliseconds into the batch, where some writes have committed and not yet been acknowledged. The
// protections: the transport acknowledges a call only after its reply (so a killed call is redelivered to the next
// server) and the ledger (so a call that committed before the kill is answered from it, not run again). The caller
// keeps waiting through the restart, as the worker would within its timeout: every call must end answered, exactly once.
//
// Sabotage: Nest's stock RMQ server with its default noAck (weakened-server.mjs, 'ack-on-delivery'), which
// acknowledges each call on delivery: a kill loses what was in flight, and its callers are left without an answer.

const PHASE = 'server SIGKILLs';

export const serverKillsPhase = (target: PhaseTarget, size: { kills: number; batch: number }): Promise<PhaseRow> =>
  runPhase(
    PHASE,
    target,
    async ({ stack, caller, record, check }) => {
      const context = await stack.contextFor('admin@greenhill.school');
      const tag = randomUUID().slice(0, 8);
      for (let kill = 0; kill < size.kills; kill++) {
        const lock = kill % 2 === 0 ? await holdTableLock(stack, 'departments') : undefined;
        const batch = Array.from({ length: size.batch }, (_, index) => {
          const name = `Kill ${tag} ${kill}-${index}`;
          return caller.call(createDepartmentTool, { name }, context).then((outcome) => record({ ...outcome, effectKey: name }));
        });
        if (lock) await waitFor(async () => (await lock.waiters()) > 0, 10_000, 'a write waiting on the lock');
        else await sleep(5 + Math.floor(Math.random() * 40));
        await stack.server().stop('SIGKILL');
        await lock?.release();
        await stack.startServer({ ...(target.weakening ? { weakening: target.weakening } : {}) });
        const outcomes = await Promise.all(batch);
        const unanswered = outcomes.filter((outcome) => outcome.kind !== 'ok');
        check(
          unanswered.length === 0,
          `kill ${kill + 1}: ${unanswered.length} of ${size.batch} calls were not answered after the restart (${unanswered[0]?.error?.slice(0, 80)})`,
        );
      }
    },
    { effects: departmentsByName(target.stack.owner) },
  );

describe(PHASE, () => {
  // Longer than a restart: a redelivered call is answered to the caller that is still waiting for it.
  const target = usePhaseTarget({ timeoutMs: 20_000 });

  it('10 SIGKILLs with 8 writes in flight each: every call answered after the restart, each write exactly once', async () => {
    const row = await serverKillsPhase(target, { kills: 10, batch: 8 });
    expectPassed(row);
  });

  it('fails when calls are acknowledged on delivery', async () => {
    await target.stack.server().stop();
    const shortCaller = await createToolCaller({ brokerUrl: target.stack.workerBrokerUrl, toolsQueue: target.stack.toolsQueue, timeoutMs: 8_000 });
    try {
      await target.stack.startServer({ weakening: 'ack-on-delivery' });
      const row = await serverKillsPhase({ stack: target.stack, caller: shortCaller, weakening: 'ack-on-delivery' }, { kills: 1, batch: 8 });
      expectCaught(row, 'acknowledged on delivery');
    } finally {
      await shortCaller.close();
    }
  });
});
