import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Where phases leave their rows; tools/scripts/run-reliability.mjs prints them as the one table. */
export const ROWS_DIR = fileURLToPath(new URL('../../../../tmp/reliability/', import.meta.url));

export type PhaseCounts = {
  calls: number;
  ok: number;
  refused: number;
  unknown: number;
  /** Reported done, did not happen. */
  lost: number;
  /** Happened more than once (effect or audit row). */
  duplicated: number;
  /** Reported failed (a definite refusal), happened. */
  ghost: number;
  /** Reported unknown, happened: what get_tool_call_outcome is for. Not a failure. */
  recovered: number;
  /** An effect, audit row or ledger row no call accounts for, or one without the others. */
  unexpected: number;
  /** Another school's data or identity reached a caller. */
  leaked: number;
  /** An error text that failed the allowlist (stack, SQL, host, port, path, driver message). */
  unmasked: number;
};

export type PhaseRow = PhaseCounts & {
  phase: string;
  verdict: 'PASS' | 'FAIL';
  /** Every reason for FAIL, one line each: the counts above, then the phase's own checks. */
  failures: string[];
  ms: number;
};

export const emptyCounts = (): PhaseCounts => ({
  calls: 0,
  ok: 0,
  refused: 0,
  unknown: 0,
  lost: 0,
  duplicated: 0,
  ghost: 0,
  recovered: 0,
  unexpected: 0,
  leaked: 0,
  unmasked: 0,
});

const FAILING: readonly (keyof PhaseCounts)[] = ['lost', 'duplicated', 'ghost', 'unexpected', 'leaked', 'unmasked'];

export const addCounts = (into: PhaseCounts, from: Partial<PhaseCounts>): PhaseCounts => {
  for (const [key, value] of Object.entries(from) as [keyof PhaseCounts, number][]) into[key] += value;
  return into;
};

/** The verdict: FAIL on any failing count or any failed check of the phase's own (a message each). */
export const verdictOf = (phase: string, counts: PhaseCounts, checkFailures: string[], ms: number): PhaseRow => {
  const failures = [...FAILING.filter((key) => counts[key] > 0).map((key) => `${counts[key]} ${key}`), ...checkFailures];
  return { phase, ...counts, verdict: failures.length ? 'FAIL' : 'PASS', failures, ms };
};

/**
 * Writes the row of a phase run against the real target. A sabotage run (the same phase against a target with its
 * protection switched off) writes `<phase>.sabotage-<what>.json`, so the table can show that the phase caught it. `dir` (ending
 * in /) is another table's folder: `npm run test:cluster` writes its rows to tmp/cluster/.
 */
export const writePhaseRow = (row: PhaseRow, options: { sabotage?: string; dir?: string } = {}): void => {
  const dir = options.dir ?? ROWS_DIR;
  mkdirSync(dir, { recursive: true });
  const slug = row.phase.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  // One file per sabotage of a phase: a phase may check more than one protection.
  const file = options.sabotage ? `${slug}.sabotage-${options.sabotage.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.json` : `${slug}.json`;
  writeFileSync(`${dir}${file}`, `${JSON.stringify({ ...row, ...(options.sabotage ? { sabotage: options.sabotage } : {}) }, null, 2)}\n`);
};
