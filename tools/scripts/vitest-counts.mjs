// What the battery's and the cluster test's runners share: vitest run with a JSON report, and the counts read from it.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** node's arguments for `vitest run --config <config>` with the default reporter and a JSON report at `report`. */
export const vitestArgs = (config, report, extra = []) => [
  `${ROOT}node_modules/vitest/vitest.mjs`,
  'run',
  '--config',
  config,
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${report}`,
  ...extra,
];

/** Passed and failed tests from the JSON report; a run that exited non-zero with nothing failed counts as one failure. */
export const countsOf = (report, exitStatus) => {
  let passed = 0;
  let failed = 0;
  if (existsSync(report)) {
    const parsed = JSON.parse(readFileSync(report, 'utf8'));
    // A file that failed outside its tests (a broken import, a failed beforeAll, whose tests are then reported
    // skipped) counts as one failure.
    const broken = parsed.testResults.filter((suite) => suite.status === 'failed' && !suite.assertionResults.some((test) => test.status === 'failed')).length;
    passed = parsed.numPassedTests;
    failed = parsed.numFailedTests + broken;
  }
  if (exitStatus !== 0 && failed === 0) failed = 1;
  return { passed, failed };
};

/** "file > test: first line of the error" for each failed test in the JSON report, and each file that failed outside its tests. */
export const failuresOf = (report) => {
  if (!existsSync(report)) return [];
  const parsed = JSON.parse(readFileSync(report, 'utf8'));
  const relative = (file) => file.replace(ROOT, '');
  return parsed.testResults.flatMap((suite) => {
    const failedTests = suite.assertionResults.filter((test) => test.status === 'failed');
    if (failedTests.length === 0) return suite.status === 'failed' ? [`${relative(suite.name)}: ${firstLine(suite.message)}`] : [];
    return failedTests.map((test) => `${relative(suite.name)} > ${test.fullName}: ${firstLine(test.failureMessages?.[0])}`);
  });
};

const firstLine = (message) => (message ?? 'no message').split('\n').find((line) => line.trim())?.trim().slice(0, 300) ?? 'no message';
