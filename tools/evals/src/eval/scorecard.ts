import { CATEGORIES, type Category } from './scenario.js';
import type { Verdict } from './judge.js';

/** The scorecard: pass rate per category, tokens, latency, each misbehaviour and where the platform stopped it. */

export type Tokens = { inputTokens: number; outputTokens: number };

export type ScenarioResult = {
  id: string;
  category: Category;
  persona: string;
  message: string;
  misbehaviour?: { id: string; label: string; platformStops: boolean };
  verdict: Verdict;
  latencyMs: number;
  tokens?: Tokens;
};

/** What the run must show: every scenario passes, or every misbehaviour is marked failed (and stopped where it can be). */
export type Expectation = 'all-pass' | 'misbehaviour-caught';

export type Scorecard = {
  model: string;
  /** How the model was reached: "the simulator, behaving", a base URL, or the provider. */
  via: string;
  expectation: Expectation;
  results: ScenarioResult[];
  categories: { category: Category; label: string; scenarios: number; passed: number }[];
  /** Totals over the scenarios that report them; `source` says where they come from. */
  tokens: Tokens & { source: string };
  latencyMs: { p50: number; p95: number };
  /** Why the results differ from the expectation; empty when they meet it. */
  problems: string[];
};

/** The nearest-rank percentile of a list of numbers (0 for none). */
export const percentile = (values: readonly number[], p: number): number => {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number;
};

export const expectationProblems = (expectation: Expectation, results: readonly ScenarioResult[]): string[] => {
  if (results.length === 0) return ['no scenario ran'];
  if (expectation === 'all-pass') return results.filter((result) => !result.verdict.passed).map((result) => `${result.id} failed: ${result.verdict.failures.join('; ')}`);
  return results.flatMap((result) => {
    if (!result.misbehaviour) return [`${result.id} is not a misbehaviour`];
    if (result.verdict.passed) return [`misbehaviour ${result.misbehaviour.id} was not caught: the scenario passed`];
    const stops = result.verdict.platformStops;
    if (result.misbehaviour.platformStops && (stops.length === 0 || stops.some((stop) => stop.startsWith('changed:')))) {
      return [`misbehaviour ${result.misbehaviour.id} was not stopped by the platform: ${stops.join('; ') || 'no refusal, confirmation or error'}`];
    }
    return [];
  });
};

/** Results that meet the expectation (a scenario that passed; a misbehaviour caught) and those that do not: for CI's total. */
export const expectationCounts = (card: Pick<Scorecard, 'expectation' | 'results'>): { met: number; missed: number } => {
  const missed = card.results.filter((result) => expectationProblems(card.expectation, [result]).length > 0).length;
  return { met: card.results.length - missed, missed };
};

export const buildScorecard = (model: string, via: string, expectation: Expectation, results: ScenarioResult[], tokenSource: string): Scorecard => {
  const categories = (Object.keys(CATEGORIES) as Category[]).flatMap((category) => {
    const inCategory = results.filter((result) => result.category === category);
    return inCategory.length ? [{ category, label: CATEGORIES[category], scenarios: inCategory.length, passed: inCategory.filter((result) => result.verdict.passed).length }] : [];
  });
  const counted = results.flatMap((result) => (result.tokens ? [result.tokens] : []));
  const latencies = results.map((result) => result.latencyMs);
  return {
    model,
    via,
    expectation,
    results,
    categories,
    tokens: {
      inputTokens: counted.reduce((sum, tokens) => sum + tokens.inputTokens, 0),
      outputTokens: counted.reduce((sum, tokens) => sum + tokens.outputTokens, 0),
      source: counted.length ? `${tokenSource}, ${counted.length} of ${results.length} scenarios` : 'not reported',
    },
    latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95) },
    problems: expectationProblems(expectation, results),
  };
};

const rate = (passed: number, total: number) => `${total ? Math.round((passed / total) * 100) : 0}%`;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const whereStopped = (result: ScenarioResult) => result.verdict.platformStops.join('; ') || 'the platform did not stop it: only the eval caught it';

const table = (rows: string[][]): string[] => {
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0))).join('  ').trimEnd());
};

/** The scorecard as the terminal shows it. */
export const scorecardText = (card: Scorecard): string => {
  const passed = card.results.filter((result) => result.verdict.passed).length;
  const lines = [
    `Eval of ${card.model} (${card.via}): ${card.results.length} scenarios, ${passed} passed, ${card.results.length - passed} failed`,
    '',
    ...table([
      ['category', 'passed', 'rate'],
      ...card.categories.map((row) => [row.label, `${row.passed}/${row.scenarios}`, rate(row.passed, row.scenarios)]),
      ['all', `${passed}/${card.results.length}`, rate(passed, card.results.length)],
    ]),
    '',
    `tokens: ${card.tokens.inputTokens} in, ${card.tokens.outputTokens} out (${card.tokens.source})`,
    `latency per scenario: p50 ${seconds(card.latencyMs.p50)}, p95 ${seconds(card.latencyMs.p95)}`,
  ];
  const misbehaving = card.results.filter((result) => result.misbehaviour);
  if (misbehaving.length) {
    lines.push('', 'Misbehaviours (the model did it on purpose; each must be marked failed):');
    for (const result of misbehaving) {
      lines.push(`- ${result.misbehaviour?.id} [${CATEGORIES[result.category]}]: the model ${result.misbehaviour?.label}`);
      lines.push(`    marked: ${result.verdict.passed ? 'PASSED (not caught)' : 'failed'}; ${result.verdict.failures.join('; ')}`);
      lines.push(`    where the platform stopped it: ${whereStopped(result)}`);
    }
  }
  const failed = card.results.filter((result) => !result.verdict.passed && !result.misbehaviour);
  if (failed.length) {
    lines.push('', 'Failed scenarios:');
    for (const result of failed) {
      lines.push(`- ${result.id} (${result.persona}: "${result.message}")`, ...result.verdict.failures.map((failure) => `    ${failure}`));
      if (result.verdict.platformStops.length) lines.push(`    the platform: ${result.verdict.platformStops.join('; ')}`);
    }
  }
  lines.push('', card.problems.length ? `Expectation (${card.expectation}) NOT met:\n  ${card.problems.join('\n  ')}` : `Expectation (${card.expectation}) met.`);
  return lines.join('\n');
};

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** The scorecard as a markdown report. */
export const scorecardMarkdown = (card: Scorecard): string => {
  const passed = card.results.filter((result) => result.verdict.passed).length;
  const lines = [
    `# Eval of ${card.model}`,
    '',
    `${card.via}; ${card.results.length} scenarios, ${passed} passed. Expectation \`${card.expectation}\`: ${card.problems.length ? '**not met**' : 'met'}.`,
    '',
    '| category | passed | rate |',
    '| --- | --- | --- |',
    ...card.categories.map((row) => `| ${row.label} | ${row.passed}/${row.scenarios} | ${rate(row.passed, row.scenarios)} |`),
    `| **all** | ${passed}/${card.results.length} | ${rate(passed, card.results.length)} |`,
    '',
    `Tokens: ${card.tokens.inputTokens} in, ${card.tokens.outputTokens} out (${card.tokens.source}). Latency per scenario: p50 ${seconds(card.latencyMs.p50)}, p95 ${seconds(card.latencyMs.p95)}.`,
    '',
    '| scenario | category | persona | result | latency | where the platform stopped it | failures |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...card.results.map(
      (result) =>
        `| ${result.misbehaviour ? `${result.id} (misbehaviour: ${cell(result.misbehaviour.label)})` : result.id} | ${CATEGORIES[result.category]} | ${result.persona} | ${result.verdict.passed ? 'pass' : 'FAIL'} | ${seconds(result.latencyMs)} | ${cell(result.verdict.platformStops.join('; ') || '-')} | ${cell(result.verdict.failures.join('; ') || '-')} |`,
    ),
  ];
  if (card.problems.length) lines.push('', '## Differences from the expectation', '', ...card.problems.map((problem) => `- ${cell(problem)}`));
  return `${lines.join('\n')}\n`;
};
