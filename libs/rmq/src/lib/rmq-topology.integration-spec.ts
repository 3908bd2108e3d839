import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel, type ConfirmChannel, type GetMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmqTestUrl, waitUntil } from '../test/rmq-test-broker.js';
import { rmqNames, runEventsIngestQueue, runsDeadLetterQueue, type RmqNames } from './rmq-names.js';
import { declareTopology, deleteTopology } from './rmq-topology.js';

const url = rmqTestUrl();
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-test-${suffix}`, `agent-runs-test-${suffix}`);
const quorumNames = rmqNames(`agent-tools-test-quorum-${suffix}`, `agent-runs-test-quorum-${suffix}`);

let connection: ChannelModel;
let channel: ConfirmChannel;

/** A throwaway channel for a check the broker may refuse, since a refusal closes the channel. */
const refusal = async (check: (probe: ConfirmChannel) => Promise<unknown>): Promise<unknown> => {
  const probe = await connection.createConfirmChannel();
  probe.on('error', () => undefined);
  try {
    await check(probe);
    await probe.close();
    return undefined;
  } catch (error) {
    return error;
  }
};

const getOne = async (queue: string, noAck = true): Promise<GetMessage | false> => {
  let message: GetMessage | false = false;
  await waitUntil(async () => {
    message = await channel.get(queue, { noAck });
    return message !== false;
  });
  return message;
};

const workQueueArguments = (topologyNames: RmqNames) => ({ 'x-dead-letter-exchange': topologyNames.deadLetterExchange });
const QUORUM = { 'x-queue-type': 'quorum', 'x-queue-leader-locator': 'balanced' };
const runsQueueArguments = (topologyNames: RmqNames, deliveryLimit = 3) => ({
  ...QUORUM,
  'x-delivery-limit': deliveryLimit,
  'x-dead-letter-exchange': '',
  'x-dead-letter-routing-key': runsDeadLetterQueue(topologyNames),
});
const deadLetterQueueArguments = (maxLength = 10_000) => ({ 'x-max-length': maxLength, 'x-max-length-bytes': 64 * 1024 * 1024, 'x-overflow': 'drop-head' });

/**
 * Whether the queue exists with exactly these arguments. The broker refuses a redeclaration whose arguments differ
 * (406) and accepts an equivalent one, which reveals the arguments without the management API.
 */
const hasArguments = async (queue: string, args: Record<string, unknown>) =>
  (await refusal((probe) => probe.assertQueue(queue, { durable: true, arguments: args }))) === undefined;

const publishTo = async (queue: string, count: number, prefix = 'm') => {
  for (let index = 0; index < count; index += 1) channel.sendToQueue(queue, Buffer.from('{}'), { correlationId: `${prefix}${index}` });
  await channel.waitForConfirms();
};

beforeAll(async () => {
  connection = await connect(url, { noDelay: true });
  connection.on('error', () => undefined);
  channel = await connection.createConfirmChannel();
  await declareTopology(url, names);
});

afterAll(async () => {
  await connection?.close().catch(() => undefined);
  await deleteTopology(url, names);
  await deleteTopology(url, quorumNames);
});

describe('declareTopology', () => {
  it('is idempotent: declaring again with the same options succeeds, declares nothing again and keeps the messages', async () => {
    const queues = [names.toolsQueue, names.runsQueue, names.deadLetterQueue, runsDeadLetterQueue(names)];
    for (const queue of queues) channel.sendToQueue(queue, Buffer.from('{}'));
    await channel.waitForConfirms();

    expect(await declareTopology(url, names)).toEqual([]);
    expect(await declareTopology(url, names)).toEqual([]);

    for (const queue of queues) {
      expect((await channel.checkQueue(queue)).messageCount).toBe(1);
      await channel.purgeQueue(queue);
    }
  });

  it('declares the tools queue durable with the dead-letter exchange and no TTL or length limit (a different declaration is refused)', async () => {
    const queue = names.toolsQueue;
    expect(await hasArguments(queue, workQueueArguments(names))).toBe(true);
    expect(await refusal((probe) => probe.assertQueue(queue, { durable: true }))).toMatchObject({ code: 406 });
    expect(await refusal((probe) => probe.assertQueue(queue, { durable: false, arguments: workQueueArguments(names) }))).toMatchObject({ code: 406 });
    expect(await hasArguments(queue, { ...workQueueArguments(names), 'x-message-ttl': 1000 })).toBe(false);
    expect(await hasArguments(queue, { ...workQueueArguments(names), 'x-max-length': 1000 })).toBe(false);
  });

  it('declares the runs queue as a quorum queue with a delivery limit of 3, dead-lettering into its own queue', async () => {
    expect(await hasArguments(names.runsQueue, runsQueueArguments(names))).toBe(true);
    expect(await hasArguments(names.runsQueue, workQueueArguments(names))).toBe(false);
    expect(await hasArguments(names.runsQueue, runsQueueArguments(names, 5))).toBe(false);
  });

  it('bounds both dead-letter queues by length and bytes, dropping the oldest, with no TTL', async () => {
    for (const queue of [names.deadLetterQueue, runsDeadLetterQueue(names)]) {
      expect(await hasArguments(queue, deadLetterQueueArguments())).toBe(true);
      expect(await refusal((probe) => probe.assertQueue(queue, { durable: true }))).toMatchObject({ code: 406 });
      expect(await hasArguments(queue, { ...deadLetterQueueArguments(), 'x-message-ttl': 1000 })).toBe(false);
    }
  });

  it('dead-letters a message rejected on the tools queue into the general dead-letter queue, and a rejected run step into the runs dead-letter queue', async () => {
    await channel.purgeQueue(names.deadLetterQueue);
    await channel.purgeQueue(runsDeadLetterQueue(names));
    for (const [queue, deadLetterQueue] of [
      [names.toolsQueue, names.deadLetterQueue],
      [names.runsQueue, runsDeadLetterQueue(names)],
    ] as const) {
      channel.sendToQueue(queue, Buffer.from('{}'), { correlationId: queue });
      await channel.waitForConfirms();
      const message = await getOne(queue, false);
      if (!message) throw new Error(`Nothing arrived on ${queue}.`);
      channel.nack(message, false, false);

      const deadLetter = await getOne(deadLetterQueue);
      expect(deadLetter && deadLetter.properties.correlationId).toBe(queue);
      expect(deadLetter && deadLetter.properties.headers?.['x-first-death-reason']).toBe('rejected');
    }
    // Each went to its own queue only.
    expect((await channel.checkQueue(names.deadLetterQueue)).messageCount).toBe(0);
    expect((await channel.checkQueue(runsDeadLetterQueue(names))).messageCount).toBe(0);
  });

  it('dead-letters a run step after four deliveries (3 redeliveries), with reason delivery_limit, properties and headers kept', async () => {
    await channel.purgeQueue(runsDeadLetterQueue(names));
    channel.sendToQueue(names.runsQueue, Buffer.from('{}'), { correlationId: 'poison', headers: { 'x-kept': 'yes' } });
    await channel.waitForConfirms();
    // A requeue counts as a worker crashing mid-step does (its closed channel returns the message).
    const deliveryCounts: unknown[] = [];
    for (let delivery = 0; delivery < 4; delivery += 1) {
      const message = await getOne(names.runsQueue, false);
      if (!message) throw new Error(`Delivery ${delivery + 1} did not come.`);
      deliveryCounts.push(message.properties.headers?.['x-delivery-count']);
      channel.nack(message, false, true);
    }

    const deadLetter = await getOne(runsDeadLetterQueue(names));
    expect(deliveryCounts).toEqual([0, 1, 2, 3]);
    expect(deadLetter && deadLetter.properties.correlationId).toBe('poison');
    expect(deadLetter && deadLetter.properties.headers?.['x-first-death-reason']).toBe('delivery_limit');
    expect(deadLetter && deadLetter.properties.headers?.['x-kept']).toBe('yes');
    expect((await channel.checkQueue(names.runsQueue)).messageCount).toBe(0);
  });

  it('dead-letters an expired call with reason expired (readers of the dead-letter queue must filter on it)', async () => {
    await channel.purgeQueue(names.deadLetterQueue);
    channel.sendToQueue(names.toolsQueue, Buffer.from('{}'), { expiration: '20', correlationId: 'expires' });
    await channel.waitForConfirms();

    const deadLetter = await getOne(names.deadLetterQueue);

    expect(deadLetter && deadLetter.properties.correlationId).toBe('expires');
    expect(deadLetter && deadLetter.properties.headers?.['x-first-death-reason']).toBe('expired');
  });

  it('declares the run events exchange as a durable topic exchange', async () => {
    expect(await refusal((probe) => probe.assertExchange(names.runEventsExchange, 'topic', { durable: true }))).toBeUndefined();
    expect(await refusal((probe) => probe.assertExchange(names.runEventsExchange, 'fanout', { durable: true }))).toMatchObject({ code: 406 });
    const { queue } = await channel.assertQueue('', { exclusive: true });
    await channel.bindQueue(queue, names.runEventsExchange, 'run.*.events');

    channel.publish(names.runEventsExchange, 'run.42.events', Buffer.from('{}'), { correlationId: 'routed' });
    channel.publish(names.runEventsExchange, 'other.42', Buffer.from('{}'), { correlationId: 'not-routed' });
    await channel.waitForConfirms();

    const routed = await getOne(queue);
    expect(routed && routed.properties.correlationId).toBe('routed');
    expect(await channel.get(queue, { noAck: true })).toBe(false);
    await channel.deleteQueue(queue);
  });

  it('declares the tools exchange as a direct exchange that routes only the tools queue name to the tools queue', async () => {
    expect(await refusal((probe) => probe.assertExchange(names.toolsExchange, 'direct', { durable: true }))).toBeUndefined();
    await channel.purgeQueue(names.toolsQueue);

    channel.publish(names.toolsExchange, names.toolsQueue, Buffer.from('{}'), { correlationId: 'routed' });
    channel.publish(names.toolsExchange, names.runsQueue, Buffer.from('{}'), { correlationId: 'not-routed' });
    await channel.waitForConfirms();

    const routed = await getOne(names.toolsQueue);
    expect(routed && routed.properties.correlationId).toBe('routed');
    expect(await channel.get(names.toolsQueue, { noAck: true })).toBe(false);
    expect(await channel.get(names.runsQueue, { noAck: true })).toBe(false);
  });

  it('declares quorum tools and ingest queues with a delivery limit when asked, idempotently, and the runs queue with its own limit', async () => {
    const options = { queueType: 'quorum', deliveryLimit: 3, runsDeliveryLimit: 2 } as const;
    await declareTopology(url, quorumNames, options);
    expect(await declareTopology(url, quorumNames, options)).toEqual([]);

    const quorumArguments = { ...workQueueArguments(quorumNames), ...QUORUM, 'x-delivery-limit': 3 };
    expect(await hasArguments(quorumNames.toolsQueue, quorumArguments)).toBe(true);
    expect(await hasArguments(quorumNames.toolsQueue, workQueueArguments(quorumNames))).toBe(false);
    expect(await hasArguments(runEventsIngestQueue(quorumNames), { ...quorumArguments, 'x-single-active-consumer': true })).toBe(true);
    expect(await hasArguments(quorumNames.runsQueue, runsQueueArguments(quorumNames, 2))).toBe(true);
    // The dead-letter queues are replicated too, and stay bounded.
    for (const queue of [quorumNames.deadLetterQueue, runsDeadLetterQueue(quorumNames)]) {
      expect(await hasArguments(queue, { ...QUORUM, ...deadLetterQueueArguments() })).toBe(true);
    }
  });

  it('on a quorum tools queue, a call delivered more often than the delivery limit is dead-lettered, not dropped', async () => {
    const limited = rmqNames(`agent-tools-test-limit-${suffix}`, `agent-runs-test-limit-${suffix}`);
    await declareTopology(url, limited, { queueType: 'quorum', deliveryLimit: 1 });
    try {
      await publishTo(limited.toolsQueue, 1, 'looping');
      // Two deliveries, each refused back to the queue, as by a consumer that crashes on it: the limit is one redelivery.
      for (let delivery = 0; delivery < 2; delivery += 1) {
        const message = await getOne(limited.toolsQueue, false);
        if (message) channel.nack(message, false, true);
      }
      const dead = await getOne(limited.deadLetterQueue);
      expect(dead && dead.properties.correlationId).toBe('looping0');
      expect(await channel.get(limited.toolsQueue, { noAck: true })).toBe(false);
    } finally {
      await deleteTopology(url, limited);
    }
  });

  it('rmq:setup migrates a classic topology to quorum queues (the ingest queue only once it is empty), then changes nothing', async () => {
    const migrating = rmqNames(`agent-tools-test-migrate-${suffix}`, `agent-runs-test-migrate-${suffix}`);
    await declareTopology(url, migrating);
    try {
      const migrated = await declareTopology(url, migrating, { queueType: 'quorum' });
      expect(migrated.map((migration) => migration.queue).sort()).toEqual(
        [migrating.deadLetterQueue, runsDeadLetterQueue(migrating), migrating.toolsQueue, runEventsIngestQueue(migrating)].sort(),
      );
      expect(await hasArguments(migrating.toolsQueue, { ...workQueueArguments(migrating), ...QUORUM, 'x-delivery-limit': 5 })).toBe(true);
      expect(await declareTopology(url, migrating, { queueType: 'quorum' })).toEqual([]);
    } finally {
      await deleteTopology(url, migrating);
    }
  });

  it('drops the oldest dead letters past the length limit', async () => {
    const bounded = rmqNames(`agent-tools-test-bounded-${suffix}`, `agent-runs-test-bounded-${suffix}`);
    await declareTopology(url, bounded, { deadLetterMaxLength: 3 });
    try {
      for (const queue of [bounded.deadLetterQueue, runsDeadLetterQueue(bounded)]) {
        await publishTo(queue, 5);
        const kept: unknown[] = [];
        for (let message = await channel.get(queue, { noAck: true }); message; message = await channel.get(queue, { noAck: true })) {
          kept.push(message.properties.correlationId);
        }
        expect(kept).toEqual(['m2', 'm3', 'm4']);
      }
    } finally {
      await deleteTopology(url, bounded);
    }
  });
});

describe('declareTopology on a broker an older release set up', () => {
  const old = rmqNames(`agent-tools-test-old-${suffix}`, `agent-runs-test-old-${suffix}`);
  const lines: string[] = [];

  afterAll(async () => {
    await deleteTopology(url, old).catch(() => undefined);
  });

  it('deletes and declares again the queues whose arguments changed, saying how many messages went, and keeps the rest', async () => {
    // What the release before bounded queues declared: a classic runs queue into the fanout, an unbounded dead-letter queue.
    await channel.assertExchange(old.deadLetterExchange, 'fanout', { durable: true });
    await channel.assertQueue(old.deadLetterQueue, { durable: true });
    await channel.bindQueue(old.deadLetterQueue, old.deadLetterExchange, '');
    await channel.assertQueue(old.toolsQueue, { durable: true, arguments: workQueueArguments(old) });
    await channel.assertQueue(old.runsQueue, { durable: true, arguments: workQueueArguments(old) });
    await publishTo(old.runsQueue, 2, 'stale-step-');
    await publishTo(old.deadLetterQueue, 3, 'old-dead-letter-');
    await publishTo(old.toolsQueue, 1, 'call-');

    const migrations = await declareTopology(url, old, { log: (line) => lines.push(line) });

    expect(migrations).toEqual([
      { queue: old.deadLetterQueue, droppedMessages: 3 },
      { queue: old.runsQueue, droppedMessages: 2 },
    ]);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(`Queue "${old.deadLetterQueue}" existed with other arguments (inequivalent arg '`);
    expect(lines[0]).toContain('3 message(s) dropped (dead letters kept for inspection)');
    expect(lines[1]).toContain(`Queue "${old.runsQueue}" existed with other arguments (inequivalent arg '`);
    expect(lines[1]).toContain('2 message(s) dropped (stale run steps; the server sweeper dispatches their runs again)');
    expect(await hasArguments(old.runsQueue, runsQueueArguments(old))).toBe(true);
    expect(await hasArguments(old.deadLetterQueue, deadLetterQueueArguments())).toBe(true);
    // The tools queue's arguments did not change: its call is still there.
    expect((await channel.checkQueue(old.toolsQueue)).messageCount).toBe(1);
    // The dead-letter queue declared again is bound to its exchange again.
    channel.publish(old.deadLetterExchange, 'any', Buffer.from('{}'), { correlationId: 'after' });
    await channel.waitForConfirms();
    const deadLetter = await getOne(old.deadLetterQueue);
    expect(deadLetter && deadLetter.properties.correlationId).toBe('after');
  });

  it('changes nothing the second time: no queue declared again, messages kept', async () => {
    await publishTo(old.runsQueue, 2, 'fresh-step-');
    lines.length = 0;

    expect(await declareTopology(url, old, { log: (line) => lines.push(line) })).toEqual([]);

    expect(lines).toEqual([]);
    expect((await channel.checkQueue(old.runsQueue)).messageCount).toBe(2);
    expect((await channel.checkQueue(old.toolsQueue)).messageCount).toBe(1);
  });

  it('never drops run events: an ingest queue with other arguments is declared again only once it is empty', async () => {
    const ingest = runEventsIngestQueue(old);
    await channel.deleteQueue(ingest);
    await channel.assertQueue(ingest, { durable: true, arguments: workQueueArguments(old) });
    await channel.bindQueue(ingest, old.runEventsExchange, '#');
    await publishTo(ingest, 1, 'event-');

    const refused = await declareTopology(url, old).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toContain(`Queue "${ingest}" exists with other arguments (inequivalent arg '`);
    expect((refused as Error).message).toContain('still holds messages (run events not yet stored): stop what publishes to it, let it drain');
    expect((await channel.checkQueue(ingest)).messageCount).toBe(1);

    await channel.purgeQueue(ingest);
    expect(await declareTopology(url, old)).toEqual([{ queue: ingest, droppedMessages: 0 }]);
    expect(await hasArguments(ingest, { ...workQueueArguments(old), 'x-single-active-consumer': true })).toBe(true);
    channel.publish(old.runEventsExchange, 'run-1', Buffer.from('{}'));
    await channel.waitForConfirms();
    expect(await getOne(ingest)).not.toBe(false);
  });
});

describe('deleteTopology', () => {
  it('removes every queue and exchange declareTopology made', async () => {
    const doomed = rmqNames(`agent-tools-test-doomed-${suffix}`, `agent-runs-test-doomed-${suffix}`);
    await declareTopology(url, doomed);

    await deleteTopology(url, doomed);

    for (const queue of [doomed.toolsQueue, doomed.runsQueue, runEventsIngestQueue(doomed), doomed.deadLetterQueue, runsDeadLetterQueue(doomed)]) {
      expect(await refusal((probe) => probe.checkQueue(queue))).toMatchObject({ code: 404 });
    }
    for (const exchange of [doomed.deadLetterExchange, doomed.runEventsExchange, doomed.toolsExchange]) {
      expect(await refusal((probe) => probe.checkExchange(exchange))).toMatchObject({ code: 404 });
    }
  });
});
