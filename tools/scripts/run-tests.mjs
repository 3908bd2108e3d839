#!/usr/bin/env node
// `npm test`: build, typecheck and lint every project, then run every vitest project once (unit,
// integration, end-to-end) against the real PostgreSQL and RabbitMQ, and print the totals as one line.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';

const run = (command, args, env = {}) =>
  spawnSync(command, args, { stdio: 'inherit', env: { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true', ...env } }).status ?? 1;

const steps = [
  ['build', ['npx', ['nx', 'run-many', '-t', 'build', '--output-style=static']]],
  ['typecheck', ['npx', ['nx', 'run-many', '-t', 'typecheck', '--output-style=static']]],
  ['lint', ['npx', ['nx', 'run-many', '-t', 'lint', '--output-style=static']]],
];
let failedSteps = 0;
for (const [name, [command, args]] of steps) {
  if (run(command, args) !== 0) {
    console.error(`\n${name} failed`);
    failedSteps += 1;
  }
}

const report = 'tmp/vitest-report.json';
mkdirSync('tmp', { recursive: true });
rmSync(report, { force: true });
const status = run('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`]);

let passed = 0;
let failed = failedSteps;
try {
  const results = JSON.parse(readFileSync(report, 'utf8'));
  passed = results.numPassedTests;
  failed += results.numFailedTests + (results.numTotalTests === 0 ? 1 : 0);
  // A suite that failed to load reports no tests of its own: count it, so it can never pass silently.
  failed += results.testResults.filter((suite) => suite.status === 'failed' && suite.assertionResults.length === 0).length;
} catch {
  failed += 1;
}
if (status !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
