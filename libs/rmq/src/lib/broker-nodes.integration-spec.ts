import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConnectionByName, rmqTestUrl, waitUntil } from '../test/rmq-test-broker.js';
import { connectToAnyNode } from './broker-nodes.js';
import { RecoveringConnection } from './rmq-connection.js';

const url = rmqTestUrl();
const suffix = randomUUID().slice(0, 8);
const SILENT = { log: () => undefined, warn: () => undefined, error: () => undefined };

/** A "node" that accepts TCP and hangs up at once: a broker that is down, without depending on a free port. */
let dead: Server;
let deadUrl: string;

beforeAll(async () => {
  dead = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
  const address = dead.address();
  if (typeof address !== 'object' || address === null) throw new Error('no port');
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(address.port);
  deadUrl = parsed.href;
});

afterAll(async () => {
  await new Promise((resolve) => dead.close(resolve));
});

describe('a connection given several broker nodes', () => {
  it('moves to the next node when its first one refuses, and back round the list after a lost connection', async () => {
    const connectionName = `rmq-test-nodes-${suffix}`;
    const connection = new RecoveringConnection({
      url: `${deadUrl},${url}`,
      firstNode: 0,
      connectionName,
      what: 'testing node rotation',
      logger: SILENT,
      recovery: { initialDelay: 20, maxDelay: 50, initialMaxRetries: 3 },
      setup: async () => undefined,
    });
    const seen: string[] = [];
    connection.on('connect', () => seen.push(`connect ${connection.node}`));
    connection.on('connect-failed', () => seen.push('failed'));
    try {
      await connection.open(5_000);
      const live = connection.node;
      expect(seen).toEqual(['failed', `connect ${live}`]);
      // The broker drops the connection: the next attempt goes to the dead node, the one after back to the live one.
      await closeConnectionByName(connectionName);
      await waitUntil(() => seen.length >= 4, 5_000);
      expect(seen).toEqual(['failed', `connect ${live}`, 'failed', `connect ${live}`]);
    } finally {
      await connection.close();
    }
  });

  it('sabotage: with the single URL of the dead node, start-up fails after its retries (no rotation to save it)', async () => {
    const connection = new RecoveringConnection({
      url: deadUrl,
      what: 'testing one dead node',
      logger: SILENT,
      recovery: { initialDelay: 20, maxDelay: 50, initialMaxRetries: 3 },
      setup: async () => undefined,
    });
    await expect(connection.open(5_000)).rejects.toThrow(/Could not start testing one dead node/);
  });

  it('connectToAnyNode takes the first node that accepts, and names every node when none does, masking passwords', async () => {
    const model = await connectToAnyNode(`${deadUrl},${url}`, {}, 0);
    await model.close();
    const error = await connectToAnyNode(`${deadUrl},${deadUrl}`, {}, 0).then(
      () => null,
      (caught: unknown) => caught as Error,
    );
    expect(error?.message).toMatch(/no broker node accepted the connection \(127\.0\.0\.1:\d+: .*; 127\.0\.0\.1:\d+: .*\)/);
    expect(error?.message).not.toContain(new URL(url).password || 'never-there');
  });
});
