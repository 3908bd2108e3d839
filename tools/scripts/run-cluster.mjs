// `npm run test:cluster`: the platform on a three-node RabbitMQ cluster and behind PgBouncer, with nodes and a server
// killed under load, and the broker clients and apps over amqps:// to a TLS-only node (tools/reliability/src/cluster).
// Installs what it needs from Debian (as .ci/run installs chromium), builds, runs the tests, prints the reconciliation
// table and failover times, and ends with "N passed, N failed".
// Whatever happens (a failure, a timeout's SIGTERM), it stops what it started by PID: the test's process group, and the
// RabbitMQ nodes by the PID files in the cluster's own directory (they run in sessions of their own).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countsOf, vitestArgs } from './vitest-counts.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ROWS = `${ROOT}tmp/cluster/`;
const REPORT = `${ROOT}tmp/cluster-report.json`;
const CLUSTER_BASE = process.env['RMQ_CLUSTER_BASE'] ?? join(tmpdir(), `naalya-test-cluster-${process.pid}`);
const started = Date.now();
const say = (line) => console.log(`--- [${((Date.now() - started) / 1000).toFixed(0)} s] ${line}`);
const done = (passed, failed) => {
  console.log(`\nwall time ${((Date.now() - started) / 1000).toFixed(0)} s`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 ? 0 : 1);
};

/** Whether `pid` is still one of this cluster's processes (its environment names the cluster's directory), not a reused PID. */
const ours = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(CLUSTER_BASE);
  } catch {
    return false;
  }
};

/** The PID files of every node under the cluster's directory: the three nodes in it, the TLS test's node a level down. */
const pidFiles = (dir, depth = 0) => {
  if (depth > 2 || !existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return pidFiles(join(dir, entry.name), depth + 1);
    return entry.name === 'beam.pid' || entry.name === 'wrapper.pid' ? [join(dir, entry.name)] : [];
  });
};

/** Kills -9 the nodes the test started, from their PID files, and removes their directory. Never by process name. */
const stopNodes = () => {
  for (const path of pidFiles(CLUSTER_BASE)) {
    const pid = Number(readFileSync(path, 'utf8').trim());
    try {
      if (pid > 0 && ours(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone: the test stopped it.
    }
  }
  rmSync(CLUSTER_BASE, { recursive: true, force: true });
};

const install = (program, pkg) => {
  const found = () => spawnSync('sh', ['-c', `command -v ${program} || test -x /usr/lib/rabbitmq/bin/${program}`], { stdio: 'ignore' }).status === 0;
  if (found()) return true;
  const apt = (args) => spawnSync('apt-get', args, { stdio: 'ignore', timeout: 120_000 }).status === 0;
  if (!apt(['install', '-y', '-q', pkg]) && apt(['update', '-q'])) apt(['install', '-y', '-q', pkg]);
  return found();
};

say('packages (Debian): rabbitmq-server, pgbouncer');
for (const [program, pkg] of [
  ['rabbitmq-server', 'rabbitmq-server'],
  ['pgbouncer', 'pgbouncer'],
]) {
  if (!install(program, pkg)) {
    console.error(`${pkg} is not installed and could not be installed with apt-get.`);
    done(0, 1);
  }
}

say('build (server, worker)');
const build = spawnSync('npx', ['nx', 'run-many', '-t', 'build', '--projects=server,worker', '--output-style=static'], {
  cwd: ROOT,
  stdio: ['ignore', 'ignore', 'inherit'],
  env: { ...process.env, NX_DAEMON: 'false' },
  timeout: 180_000,
});
if (build.status !== 0) {
  console.error('The build failed.');
  done(0, 1);
}

rmSync(ROWS, { recursive: true, force: true });
rmSync(REPORT, { force: true });
mkdirSync(ROWS, { recursive: true });
say('test: 3 RabbitMQ nodes, PgBouncer, 2 servers, 2 workers, faults; a TLS-only node, amqps://');
// Its own process group, so a stop reaches the servers, workers and PgBouncer it spawned, by that one PID.
const vitest = spawn(process.execPath, vitestArgs('tools/reliability/vitest.cluster.config.mts', REPORT, process.argv.slice(2)), {
  cwd: ROOT,
  stdio: 'inherit',
  detached: true,
  env: { ...process.env, RMQ_CLUSTER_BASE: CLUSTER_BASE },
});
const stopAll = () => {
  try {
    process.kill(-vitest.pid, 'SIGKILL');
  } catch {
    // The group is gone already.
  }
  stopNodes();
};
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    console.log(`\n${signal}: stopping what the test started`);
    stopAll();
    done(0, 1);
  });
}
const status = await new Promise((resolve) => vitest.once('exit', (code) => resolve(code ?? 1)));
stopAll();

const rows = readdirSync(ROWS)
  .filter((file) => file.endsWith('.json'))
  .map((file) => JSON.parse(readFileSync(`${ROWS}${file}`, 'utf8')));
const COLUMNS = ['conversations', 'calls', 'ok', 'refused', 'unknown', 'lost', 'duplicated', 'ghost', 'recovered', 'unexpected'];
const table = [
  ['run', ...COLUMNS, 'verdict', 'expected', 'seconds'],
  ...rows.map((row) => [
    row.sabotage ? `sabotage: ${row.sabotage}` : row.phase,
    ...COLUMNS.map((column) => String(row[column])),
    row.verdict,
    row.sabotage ? 'FAIL' : 'PASS',
    (row.ms / 1000).toFixed(1),
  ]),
];
const widths = table[0].map((_, column) => Math.max(...table.map((line) => line[column].length)));
const line = (cells) => cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join('  ');
console.log('\nCluster reconciliation');
console.log(line(table[0]));
console.log(widths.map((width) => '-'.repeat(width)).join('  '));
for (const cells of table.slice(1)) console.log(line(cells));
for (const row of rows) {
  console.log(`\nFailover (${row.sabotage ? `sabotage: ${row.sabotage}` : row.phase}):\n  ${row.failover.join('\n  ')}`);
  if (row.verdict === 'FAIL') console.log(`${row.sabotage ? 'caught' : 'failed'}:\n  ${row.failures.join('\n  ')}`);
}

const { passed, failed } = countsOf(REPORT, status);
done(passed, failed);
