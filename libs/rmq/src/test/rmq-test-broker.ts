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
