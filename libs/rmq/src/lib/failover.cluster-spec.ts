import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RmqCluster } from '../cluster/rmq-cluster.js';
import { AckAfterReplyTransport } from './ack-after-reply.transport.js';
import { ConfirmPublisher } from './confirm-publisher.js';
import { rmqNames } from './rmq-names.js';
import { RmqRpcClient } from './rmq-rpc-client.js';
import { declareTopology, deleteTopology } from './rmq-topology.js';

// RMQ_CLUSTER_BASE names a cluster's working directory to reuse (left running, its killed node restarted); by default
// the test boots its own in a fresh directory and stops it at the end.
const cluster = new RmqCluster({
  base: process.env['RMQ_CLUSTER_BASE'] ?? join(tmpdir(), `naalya-rmq-cluster-${process.pid}`),
  portBase: Number(process.env['RMQ_CLUSTER_PORT_BASE'] ?? 5680),
});
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-failover-${suffix}`, `agent-runs-failover-${suffix}`);
const lines: string[] = [];
const logger = {
  log: (message: unknown) => lines.push(`log ${String(message)}`),
  warn: (message: unknown) => lines.push(`warn ${String(message)}`),
  error: (message: unknown) => lines.push(`error ${String(message)}`),
};
// Reconnect quickly: the failover time measured here is mostly this backoff.
const reconnect = { initialDelayMs: 100, maxDelayMs: 1_000 };

let startedHere = false;
let killed: number | undefined;
let transport: AckAfterReplyTransport;
let client: RmqRpcClient;
let publisher: ConfirmPublisher;

const answers = async (url: string): Promise<boolean> => {
  try {
    const connection = await connect(url, { timeout: 2_000 });
    await connection.close();
    return true;
  } catch {
    return false;
  }
};

/** Calls until one is answered (those made while the clients fail over may fail), within boundMs. */
const firstAnswer = async (boundMs: number) => {
  const deadline = Date.now() + boundMs;
  let failures = 0;
  while (Date.now() < deadline) {
    try {
      return { answer: await client.call('echo', { after: 'kill' }, 3_000), failures };
    } catch {
      failures += 1;
      await sleep(100);
    }
  }
  return { answer: undefined, failures };
};

beforeAll(async () => {
  if (!(await answers(cluster.url(1)))) {
    startedHere = true;
    await cluster.up();
  }
  // Declared through node 1, so node 1 leads every quorum queue: killing it forces an election.
  await declareTopology(cluster.url(1), names, { queueType: 'quorum' });

  transport = new AckAfterReplyTransport({
    url: cluster.urls(),
    firstNode: 0,
    queue: names.toolsQueue,
    prefetch: 8,
    deadLetterExchange: names.deadLetterExchange,
    handlerTimeoutMs: 5_000,
    drainTimeoutMs: 1_000,
    reconnect,
    logger,
  });
  transport.addHandler('echo', async (data: unknown) => ({ echoed: data }), false);
  await new Promise<void>((resolve, reject) => transport.listen((error?: unknown) => (error ? reject(error as Error) : resolve())));

  client = new RmqRpcClient({ url: cluster.urls(), firstNode: 0, exchange: names.toolsExchange, routingKey: names.toolsQueue, reconnect, logger });
  await client.connect(10_000);

  publisher = new ConfirmPublisher({
    url: cluster.urls(),
    firstNode: 0,
    what: `publishing to "${names.runsQueue}"`,
    logger,
    recovery: { initialDelay: reconnect.initialDelayMs, maxDelay: reconnect.maxDelayMs },
    check: (channel) => channel.checkQueue(names.runsQueue),
    confirmTimeoutMs: 30_000,
    reconnectWaitMs: 10_000,
  });
  await publisher.start();
});

afterAll(async () => {
  await client?.close();
  await publisher?.close();
  await transport?.close();
  const survivor = [1, 2, 3].find((node) => node !== killed) ?? 1;
  await deleteTopology(cluster.url(survivor), names).catch(() => undefined);
  if (startedHere) {
    await cluster.down();
    await rm(cluster.base, { recursive: true, force: true });
  } else if (killed !== undefined) await cluster.start(killed);
});

describe('failover on a three-node cluster with quorum queues', () => {
  it('the RPC client, the ack-after-reply transport and a confirm publisher keep working after their node, the queues’ leader, is killed', async () => {
    const before = await cluster.leaders(1);
    expect(before.find((queue) => queue.name === names.toolsQueue)).toMatchObject({ type: 'quorum', leader: `${cluster.nodePrefix}1@localhost` });
    expect(await client.call('echo', { before: 'kill' }, 5_000)).toEqual({ echoed: { before: 'kill' } });
    await publisher.publish('', names.runsQueue, Buffer.from('{"step":"before"}'));
    // Sabotage: the one-URL configuration of before, pinned to the node about to die.
    const pinned = new RmqRpcClient({ url: cluster.url(1), exchange: names.toolsExchange, routingKey: names.toolsQueue, reconnect });
    await pinned.connect(5_000);

    killed = 1;
    await cluster.kill(1);
    const killedAt = Date.now();

    const { answer, failures } = await firstAnswer(30_000);
    const failoverMs = Date.now() - killedAt;
    expect(answer).toEqual({ echoed: { after: 'kill' } });
    // Every call after the failover is answered: both ends are on a surviving node, the queue has a new leader.
    for (let index = 0; index < 20; index += 1) {
      expect(await client.call('echo', { index }, 5_000)).toEqual({ echoed: { index } });
    }
    // The pinned client retries only the dead node: none of its calls is answered, however long it is given.
    try {
      for (let attempt = 0; attempt < 5; attempt += 1) {
        await expect(pinned.call('echo', { pinned: attempt }, 1_000)).rejects.toMatchObject({ failure: 'unreachable' });
        await sleep(500);
      }
    } finally {
      await pinned.close();
    }
    const publishStarted = Date.now();
    await publisher.publish('', names.runsQueue, Buffer.from('{"step":"after"}'));
    const publishMs = Date.now() - publishStarted;

    const after = await cluster.leaders(2);
    const tools = after.find((queue) => queue.name === names.toolsQueue);
    expect(tools?.leader).not.toBe(`${cluster.nodePrefix}1@localhost`);
    // Both run steps are in the runs queue, read through a surviving node: the one confirmed before the kill was not lost.
    const reader = await connect(cluster.url(cluster.nodeNumber(tools?.leader ?? `${cluster.nodePrefix}2@localhost`)));
    try {
      const channel = await reader.createChannel();
      const steps: string[] = [];
      for (let message = await channel.get(names.runsQueue, { noAck: true }); message; message = await channel.get(names.runsQueue, { noAck: true })) {
        steps.push(message.content.toString());
      }
      expect(steps).toEqual(['{"step":"before"}', '{"step":"after"}']);
    } finally {
      await reader.close();
    }
    console.log(
      JSON.stringify({ failoverMs, failedCallsDuringFailover: failures, publishAfterKillMs: publishMs, recycledPublisherChannels: publisher.recycledChannels, replacedClientChannels: client.replacedChannels, newLeader: tools?.leader }),
    );
  });
});
