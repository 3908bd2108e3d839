#!/usr/bin/env node
import { mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runEval } from './eval/run-eval.js';
import { expectationCounts, scorecardMarkdown, scorecardText, type Expectation } from './eval/scorecard.js';

/**
 * `npm run eval -- --model <provider:model> [--base-url <url>] [--simulator] [--misbehave] [--expect all-pass|misbehaviour-caught]
 * [--out dir] [--only id,id]`: the scenarios against the platform on that model; prints the scorecard, writes
 * eval-<model>.json and .md under --out, ends with "N passed, N failed" (results that meet the expectation or not) and
 * exits 0 only when all of them meet it (2 when it could not run).
 */

const USAGE = 'usage: npm run eval -- --model <provider:model> [--base-url <url>] [--simulator] [--misbehave] [--expect all-pass|misbehaviour-caught] [--out dir] [--only id,...]';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    'base-url': { type: 'string' },
    simulator: { type: 'boolean', default: false },
    misbehave: { type: 'boolean', default: false },
    expect: { type: 'string' },
    out: { type: 'string', default: 'eval-results' },
    only: { type: 'string' },
  },
});

const fail = (message: string): never => {
  console.error(`eval: ${message}\n${USAGE}`);
  process.exit(2);
};

const model = values.model ?? fail('--model is required');
if (!/^[\w-]+:.+$/.test(model)) fail(`--model must be provider:model, got ${model}`);
// Misbehaviours are scripted into the simulator: they need it.
const simulator = values.simulator || values.misbehave;
if (simulator && values['base-url']) fail('--simulator (or --misbehave) starts its own simulator: leave out --base-url');
const expectation = (values.expect ?? (values.misbehave ? 'misbehaviour-caught' : 'all-pass')) as Expectation;
if (!['all-pass', 'misbehaviour-caught'].includes(expectation)) fail(`--expect must be all-pass or misbehaviour-caught, got ${values.expect}`);

const started = Date.now();
try {
  const card = await runEval({
    model,
    ...(values['base-url'] ? { baseUrl: values['base-url'] } : {}),
    simulator,
    misbehave: values.misbehave,
    expectation,
    ...(values.only ? { only: values.only.split(',').map((id) => id.trim()) } : {}),
    log: (line) => console.log(line),
  });
  const out = resolve(values.out);
  mkdirSync(out, { recursive: true });
  const name = `eval-${model.replace(/[^\w.-]+/g, '_')}${values.misbehave ? '-misbehaving' : ''}`;
  writeFileSync(`${out}/${name}.json`, `${JSON.stringify({ ...card, wallSeconds: Math.round((Date.now() - started) / 1000) }, null, 2)}\n`);
  writeFileSync(`${out}/${name}.md`, scorecardMarkdown(card));
  console.log(`\n${scorecardText(card)}\n\nwritten: ${out}/${name}.json and .md; wall time ${((Date.now() - started) / 1000).toFixed(0)} s`);
  // The last line, for CI's total as the battery's: results that meet the expectation, and those that do not.
  const { met, missed } = expectationCounts(card);
  console.log(`${met} of ${card.results.length} results meet the expectation (${expectation}):`);
  console.log(`${met} passed, ${missed} failed`);
  process.exit(card.problems.length === 0 ? 0 : 1);
} catch (error) {
  console.error(`eval: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(2);
}
