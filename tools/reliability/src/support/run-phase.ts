import type { CallerWeakening, CallOutcome, ToolCaller } from './caller.js';
import { reconcile, type EffectProbe } from './reconcile.js';
import { addCounts, verdictOf, type PhaseCounts, type PhaseRow } from './phase-row.js';
import type { ReliabilityStack, Weakening } from './stack.js';

/**
 * What a phase runs against: the stack (processes, proxies, owner connection) and a caller, either of them weakened.
 * A phase that restarts the server starts it with `weakening` again, so a sabotaged target stays sabotaged.
 */
export type PhaseTarget = {
  stack: ReliabilityStack;
  caller: ToolCaller;
  weakening?: Weakening;
  /** How `caller` was weakened, for a phase that makes callers of its own (they must be weakened the same way). */
  callerWeakening?: CallerWeakening;
};

export type PhaseContext = PhaseTarget & {
  /** Keeps an outcome for the reconciliation and returns it. */
  record: (outcome: CallOutcome) => CallOutcome;
  /** A property the phase checks itself (timeliness, reconnection...): a false one fails the phase with `detail`. */
  check: (ok: boolean, detail: string) => void;
  /** Counts that only the phase can see (for example `leaked` for another school's rows in a reply). */
  add: (counts: Partial<PhaseCounts>, detail?: string) => void;
};

/**
 * Runs one phase body, then reconciles everything it recorded against the ledger, the audit log and the domain rows
 * (through `effects`) and returns its row with the verdict. It never throws for a failed protection: the row says FAIL.
 */
export const runPhase = async (
  phase: string,
  target: PhaseTarget,
  body: (context: PhaseContext) => Promise<void>,
  options: { effects?: EffectProbe; maxUnknownShare?: number } = {},
): Promise<PhaseRow> => {
  const started = Date.now();
  const since = new Date((await target.stack.owner.query<{ now: Date }>('SELECT now()')).rows[0].now);
  const outcomes: CallOutcome[] = [];
  const failures: string[] = [];
  const extra: Partial<PhaseCounts>[] = [];
  await body({
    ...target,
    record: (outcome) => {
      outcomes.push(outcome);
      return outcome;
    },
    check: (ok, detail) => {
      if (!ok) failures.push(detail);
    },
    add: (counts, detail) => {
      extra.push(counts);
      if (detail) failures.push(detail);
    },
  });
  const { counts, details } = await reconcile({ owner: target.stack.owner, outcomes, since, ...(options.effects ? { effects: options.effects } : {}) });
  for (const more of extra) addCounts(counts, more);
  const tooManyUnknown = options.maxUnknownShare === undefined ? undefined : unknownShareFailure(counts, options.maxUnknownShare);
  if (tooManyUnknown) failures.push(tooManyUnknown);
  return verdictOf(phase, counts, [...failures, ...details], Date.now() - started);
};

/**
 * The platform settles what a fault interrupted; only what the deadline left unsettled reaches the model as "outcome
 * unknown". A failure line when more than `maxShare` of the calls did.
 */
export const unknownShareFailure = (counts: Pick<PhaseCounts, 'calls' | 'unknown'>, maxShare: number): string | undefined =>
  counts.unknown > maxShare * counts.calls ? `${counts.unknown} of ${counts.calls} calls ended "outcome unknown", more than ${maxShare * 100} %` : undefined;

/** Runs `task(i)` for i in [0, count) with at most `concurrency` at a time; resolves with the results in order. */
export const inParallel = async <T>(count: number, concurrency: number, task: (index: number) => Promise<T>): Promise<T[]> => {
  const results: T[] = new Array(count);
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const index = next++;
      results[index] = await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, lane));
  return results;
};

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds; resolves with the time it took, or rejects after `timeoutMs`. */
export const waitFor = async (check: () => Promise<boolean> | boolean, timeoutMs = 10_000, what = 'condition'): Promise<number> => {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await check()) return Date.now() - started;
    await sleep(50);
  }
  throw new Error(`${what} not met within ${timeoutMs} ms`);
};
