// Names every failed test in the JSON reports the CI run wrote (the tests, the battery, the cluster test), so the
// run's last lines say what failed, not only how many: CI keeps only the tail of the output.
import { fileURLToPath } from 'node:url';
import { failuresOf } from './vitest-counts.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const failures = ['vitest-report.json', 'reliability-report.json', 'cluster-report.json'].flatMap((report) => failuresOf(`${ROOT}tmp/${report}`));
if (failures.length > 0) console.log(`\nfailed tests:\n  ${failures.join('\n  ')}`);
