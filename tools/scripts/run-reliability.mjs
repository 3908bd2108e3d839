// `npm run test:reliability`: the reliability battery (tools/reliability), then one table of its phases read from the
// rows they wrote under tmp/reliability/, then "N passed, N failed". Exits non-zero if any test failed.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { countsOf, vitestArgs } from './vitest-counts.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ROWS = `${ROOT}tmp/reliability/`;
const REPORT = `${ROOT}tmp/reliability-report.json`;

// The battery runs the built server and worker as processes, and drives them through their testing entry points.
for (const dist of ['apps/server/dist/main.js', 'apps/server/dist/testing-api.js', 'apps/worker/dist/main.js', 'apps/worker/dist/testing-api.js']) {
  if (!existsSync(`${ROOT}${dist}`)) {
    console.error(`${dist} is missing: build first (npx nx run-many -t build --projects=server,worker).`);
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
}

rmSync(ROWS, { recursive: true, force: true });
rmSync(REPORT, { force: true });
mkdirSync(ROWS, { recursive: true });
const started = Date.now();
const vitest = spawnSync(process.execPath, vitestArgs('tools/reliability/vitest.reliability.config.mts', REPORT, process.argv.slice(2)), {
  cwd: ROOT,
  stdio: 'inherit',
});

const rows = readdirSync(ROWS)
  .filter((file) => file.endsWith('.json'))
  .map((file) => JSON.parse(readFileSync(`${ROWS}${file}`, 'utf8')));
// A phase may have several sabotage tests, one per protection it checks.
const sabotage = new Map();
for (const row of rows.filter((candidate) => candidate.sabotage)) sabotage.set(row.phase, [...(sabotage.get(row.phase) ?? []), row]);
const phases = rows.filter((row) => !row.sabotage);

const COLUMNS = ['calls', 'ok', 'refused', 'unknown', 'lost', 'duplicated', 'ghost', 'recovered', 'unexpected', 'leaked', 'unmasked'];
const table = [
  ['phase', ...COLUMNS, 'verdict', 'switched off', 'seconds'],
  ...phases.map((row) => {
    const weakened = sabotage.get(row.phase) ?? [];
    return [
      row.phase,
      ...COLUMNS.map((column) => String(row[column])),
      row.verdict,
      weakened.length ? weakened.map((run) => `${run.verdict === 'FAIL' ? 'caught' : 'MISSED'}: ${run.sabotage}`).join('; ') : '-',
      (row.ms / 1000).toFixed(1),
    ];
  }),
];
const widths = table[0].map((_, column) => Math.max(...table.map((line) => line[column].length)));
const line = (cells) => cells.map((cell, column) => (column === 0 || column >= cells.length - 2 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ');
console.log('\nReliability battery');
console.log(line(table[0]));
console.log(widths.map((width) => '-'.repeat(width)).join('  '));
for (const cells of table.slice(1)) console.log(line(cells));
for (const row of phases.filter((candidate) => candidate.verdict === 'FAIL')) {
  console.log(`\n${row.phase} failed:\n  ${row.failures.join('\n  ')}`);
}
for (const row of [...sabotage.values()].flat().filter((candidate) => !phases.some((phase) => phase.phase === candidate.phase))) {
  console.log(`\n(sabotage of "${row.phase}" ran without its phase row)`);
}

const { passed, failed } = countsOf(REPORT, vitest.status);
console.log(`\nwall time ${((Date.now() - started) / 1000).toFixed(0)} s`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
