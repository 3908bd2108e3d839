import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * Test helpers that need the broker's own view: AMQP reports only a queue's ready count, not its unacked count.
 * They shell out to rabbitmqctl, so they only work next to the broker (as the integration tests run).
 */
export type QueueCounts = { ready: number; unacked: number };

export const rmqTestUrl = (): string => process.env['RMQ_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';

export const queueCounts = async (queue: string): Promise<QueueCounts> => {
  const { stdout } = await run('rabbitmqctl', ['list_queues', '-s', 'name', 'messages_ready', 'messages_unacknowledged']);
  const row = stdout
    .split('\n')
    .map((line) => line.split('\t'))
    .find(([name]) => name === queue);
  if (!row) throw new Error(`Queue ${queue} does not exist.`);
  return { ready: Number(row[1]), unacked: Number(row[2]) };
};

/** Closes, from the broker side, the connection that announced this `connection_name`. */
export const closeConnectionByName = async (connectionName: string): Promise<void> => {
  const { stdout } = await run('rabbitmqctl', ['list_connections', '-s', 'pid', 'client_properties']);
  const row = stdout.split('\n').find((line) => line.includes(`"${connectionName}"`));
  if (!row) throw new Error(`No connection named ${connectionName}.`);
  const pid = row.split('\t')[0] ?? '';
  await run('rabbitmqctl', ['close_connection', pid, 'closed by a test']);
};

/** Polls until the check passes or the time is up; the caller then asserts, so a timeout fails with the real values. */
export const waitUntil = async (check: () => boolean | Promise<boolean>, timeoutMs = 3_000, intervalMs = 25): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
};

/** The test broker's address with another user and vhost, for tests that set up users of their own. */
export const rmqTestUrlFor = (user: string, password: string, vhost: string): string => {
  const url = new URL(rmqTestUrl());
  url.username = encodeURIComponent(user);
  url.password = encodeURIComponent(password);
  url.pathname = `/${encodeURIComponent(vhost)}`;
  return url.href;
};

/** rabbitmqctl's view of one user's permissions on a vhost, or undefined when it has none. */
export const permissionsOf = async (vhost: string, user: string): Promise<{ configure: string; write: string; read: string } | undefined> => {
  const { stdout } = await run('rabbitmqctl', ['list_permissions', '-q', '-s', '-p', vhost]);
  const row = stdout
    .split('\n')
    .map((line) => line.split('\t'))
    .find(([name]) => name === user);
  return row ? { configure: row[1] ?? '', write: row[2] ?? '', read: row[3] ?? '' } : undefined;
};

export const rabbitmqctl = async (...args: string[]): Promise<void> => {
  await run('rabbitmqctl', ['-q', ...args]);
};

/** Removes a test's vhost (with everything in it) and its users; what is already gone is skipped. */
export const deleteBrokerAccess = async (vhost: string, users: string[]): Promise<void> => {
  await rabbitmqctl('delete_vhost', vhost).catch(() => undefined);
  for (const user of users) await rabbitmqctl('delete_user', user).catch(() => undefined);
};
