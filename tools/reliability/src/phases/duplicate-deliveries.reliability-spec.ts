import { randomUUID } from 'node:crypto';
import { createDepartmentTool } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import {
  departmentsByName,
  expectCaught,
  expectPassed,
  inParallel,
  restartWeakened,
  runPhase,
  usePhaseTarget,
  type PhaseRow,
  type PhaseTarget,
} from '../support/index.js';

// Duplicate deliveries: the same envelope (same call id) published again and again, some copies while the first is
// still running, the rest after it answered, as a broker redelivery or a checkpoint replay would. The protection is
// the idempotency ledger (claimed per call id, written in the write's own transaction): exactly one effect and one
// audit row per call id, and every copy gets the first answer. Its sabotage is the same server with the ledger
// replaced by a no-op (weakened-server.mjs, 'no-ledger'): the copies then run again.

const PHASE = 'duplicate deliveries';

export const duplicateDeliveriesPhase = (target: PhaseTarget, size: { calls: number; copies: number }): Promise<PhaseRow> =>
  runPhase(
    PHASE,
    target,
    async ({ stack, caller, record }) => {
      const context = await stack.contextFor('admin@greenhill.school');
      const tag = randomUUID().slice(0, 8);
      await inParallel(size.calls, 8, async (index) => {
        const name = `Dup ${tag} ${index}`;
        const envelope = caller.envelope(createDepartmentTool, { name }, context);
        const send = () => caller.send(createDepartmentTool, envelope).then((outcome) => record({ ...outcome, effectKey: name }));
        const concurrent = Math.ceil(size.copies / 2);
        // The first delivery and its concurrent copies race for the call id...
        await Promise.all(Array.from({ length: concurrent }, send));
        // ...and the late copies arrive after it answered.
        await Promise.all(Array.from({ length: size.copies - concurrent }, send));
      });
    },
    { effects: departmentsByName(target.stack.owner) },
  );

describe(PHASE, () => {
  const target = usePhaseTarget({ timeoutMs: 15_000 });

  it('1,000 duplicate deliveries (100 calls, each delivered 11 times): one effect, one audit row and the same answer per call', async () => {
    const row = await duplicateDeliveriesPhase(target, { calls: 100, copies: 11 });
    expectPassed(row);
    expect(row.calls).toBe(1_100);
  });

  it('fails with the idempotency ledger switched off', async () => {
    await restartWeakened(target.stack, 'no-ledger');
    const row = await duplicateDeliveriesPhase(target, { calls: 10, copies: 4 });
    expectCaught(row, 'no idempotency ledger');
    // Not `unexpected`: without a ledger every write lacks its ledger row, which says nothing about duplicates.
    expect(row.duplicated + row.ghost).toBeGreaterThan(0);
  });
});
