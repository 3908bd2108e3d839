import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, serviceUser } from './local-service.js';
import { APP_ROLE, OWNER_URL } from './stack.js';

/** The password the owner (postgres) gives PgBouncer; PgBouncer itself reaches PostgreSQL by the local trust rule. */
const OWNER_POOLER_PASSWORD = 'pgbouncer-test-owner';
const START_TIMEOUT_MS = 5_000;
const STOP_TIMEOUT_MS = 3_000;

export type TestPgBouncer = {
  port: number;
  /** PgBouncer's process: the bench charges its CPU to the database path. */
  pid: number | undefined;
  /** The app role's URL for `database` through the pooler. */
  appUrl: (database: string) => string;
  /** The owner's URL for `database` through the pooler. */
  ownerUrl: (database: string) => string;
  /** PgBouncer's own log, for a failing test's message. */
  log: () => string;
  stop: () => Promise<void>;
};

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

export type PgBouncerOptions = {
  /**
   * Server connections per database and role (`default_pool_size`). Default 2, so that the tests' clients really
   * share them; the bench gives its database pool size, so that PostgreSQL sees as many connections as without the
   * pooler and the difference is the pooler's hop alone.
   */
  poolSize?: number;
};

/**
 * A throwaway PgBouncer (the `pgbouncer` binary on PATH) on a free port in front of the test PostgreSQL, in
 * transaction pooling. Strict about startup parameters (no ignore_startup_parameters), as PgBouncer is by default. Its
 * files live in a temp dir that stop() removes. The server's PgBouncer tests, `npm run test:cluster` and
 * `npm run bench -- --cluster` use it.
 */
export const startPgBouncer = async ({ poolSize = 2 }: PgBouncerOptions = {}): Promise<TestPgBouncer> => {
  const target = new URL(OWNER_URL);
  const owner = decodeURIComponent(target.username);
  const dir = mkdtempSync(join(tmpdir(), 'naalya-pgbouncer-'));
  const port = await freePort();
  const logFile = join(dir, 'pgbouncer.log');
  // Plain-text secrets in the userlist let PgBouncer run SCRAM with its clients; test-only passwords.
  writeFileSync(join(dir, 'userlist.txt'), `"${APP_ROLE.name}" "${APP_ROLE.password}"\n"${owner}" "${OWNER_POOLER_PASSWORD}"\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = scram-sha-256',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 200',
      'query_wait_timeout = 10',
      `logfile = ${logFile}`,
      '',
    ].join('\n'),
  );
  writeFileSync(logFile, '');
  const user = serviceUser();
  if (user) for (const file of ['', 'userlist.txt', 'pgbouncer.ini', 'pgbouncer.log']) chownSync(join(dir, file), user.uid, user.gid);

  const child: ChildProcess = spawn('pgbouncer', [join(dir, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'pipe'], ...user });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let spawnError: Error | undefined;
  child.once('error', (error) => (spawnError = error));
  const log = () => `${readFileSync(logFile, 'utf8')}${stderr}`;

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + START_TIMEOUT_MS;
  while (!(await accepts(port))) {
    if (spawnError || child.exitCode !== null || Date.now() > deadline) {
      const reason = spawnError ? `${spawnError.message} (is pgbouncer installed?)` : log();
      await stop();
      throw new Error(`PgBouncer did not start on port ${port}: ${reason}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  const urlFor = (database: string, name: string, password: string) => {
    const url = new URL(`postgres://127.0.0.1:${port}/${encodeURIComponent(database)}`);
    url.username = name;
    url.password = password;
    return url.toString();
  };
  return {
    port,
    pid: child.pid,
    appUrl: (database) => urlFor(database, APP_ROLE.name, APP_ROLE.password),
    ownerUrl: (database) => urlFor(database, owner, OWNER_POOLER_PASSWORD),
    log,
    stop,
  };
};
