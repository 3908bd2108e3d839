import { afterAll, beforeAll, expect } from 'vitest';
import { createToolCaller, type CallerWeakening } from './caller.js';
import { writePhaseRow, type PhaseRow } from './phase-row.js';
import type { PhaseTarget } from './run-phase.js';
import { createReliabilityStack, type ReliabilityStack, type Weakening } from './stack.js';

export type PhaseTargetOptions = {
  /** The caller's time limit per call (the worker's TOOL_CALL_TIMEOUT_MS as this phase needs it). */
  timeoutMs: number;
  stack?: Parameters<typeof createReliabilityStack>[0];
  /** Starts the worker process too, for a phase that drives conversations. */
  worker?: boolean;
};

/**
 * The target of a phase file's tests: a stack of its own (database, queues, fault proxies) with the server started,
 * and a caller as the worker. Filled in before the file's first test and torn down after its last.
 */
export const usePhaseTarget = (options: PhaseTargetOptions): PhaseTarget => {
  const target = {} as PhaseTarget;
  beforeAll(async () => {
    target.stack = await createReliabilityStack(options.stack);
    await target.stack.startServer();
    if (options.worker) await target.stack.startWorker();
    target.caller = await createToolCaller({ brokerUrl: target.stack.workerBrokerUrl, toolsQueue: target.stack.toolsQueue, timeoutMs: options.timeoutMs });
  });
  afterAll(async () => {
    await target.caller?.close();
    await target.stack?.teardown();
  });
  return target;
};

/** Puts the phase's row in the table and fails the test unless the phase passed, saying why. */
export const expectPassed = (row: PhaseRow): void => {
  writePhaseRow(row);
  expect(row.verdict, row.failures.join('\n')).toBe('PASS');
};

/** Restarts the server with one protection switched off (weakened-server.mjs), for the phase's sabotage test. */
export const restartWeakened = async (stack: ReliabilityStack, weakening: Weakening): Promise<void> => {
  await stack.server().stop();
  await stack.startServer({ weakening });
};

/**
 * Runs a sabotage test's phase with a caller weakened one way (caller.ts) on the same stack and timeout, the server left
 * as it is; the weakened caller is closed afterwards.
 */
export const withWeakenedCaller = async <T>(target: PhaseTarget, weakening: CallerWeakening, run: (weakened: PhaseTarget) => Promise<T>): Promise<T> => {
  const caller = await createToolCaller({ brokerUrl: target.stack.workerBrokerUrl, toolsQueue: target.stack.toolsQueue, timeoutMs: target.caller.timeoutMs, weakening });
  try {
    return await run({ ...target, caller, callerWeakening: weakening });
  } finally {
    await caller.close();
  }
};

/** Puts the sabotage row in the table and fails the test unless the phase caught what was switched off. */
export const expectCaught = (row: PhaseRow, switchedOff: string): void => {
  writePhaseRow(row, { sabotage: switchedOff });
  expect(row.verdict).toBe('FAIL');
};
