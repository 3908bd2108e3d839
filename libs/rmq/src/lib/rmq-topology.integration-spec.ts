import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel, type ConfirmChannel, type GetMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rmqTestUrl, waitUntil } from '../test/rmq-test-broker.js';
import { rmqNames, type RmqNames } from './rmq-names.js';
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
  it('is idempotent: declaring again with the same options succeeds and keeps the messages', async () => {
    channel.sendToQueue(names.toolsQueue, Buffer.from('{}'));
    await channel.waitForConfirms();

    await declareTopology(url, names);
    await declareTopology(url, names);

    expect((await channel.checkQueue(names.toolsQueue)).messageCount).toBe(1);
    await channel.purgeQueue(names.toolsQueue);
  });

  it('declares the work queues durable with the dead-letter exchange and no TTL or length limit (a different declaration is refused)', async () => {
    // The broker refuses a redeclaration whose arguments differ (406) and accepts an equivalent one, which reveals
    // the arguments without the management API.
    for (const queue of [names.toolsQueue, names.runsQueue]) {
      expect(await refusal((probe) => probe.assertQueue(queue, { durable: true, arguments: workQueueArguments(names) }))).toBeUndefined();
      expect(await refusal((probe) => probe.assertQueue(queue, { durable: true }))).toMatchObject({ code: 406 });
      expect(await refusal((probe) => probe.assertQueue(queue, { durable: false, arguments: workQueueArguments(names) }))).toMatchObject({ code: 406 });
      expect(
        await refusal((probe) => probe.assertQueue(queue, { durable: true, arguments: { ...workQueueArguments(names), 'x-message-ttl': 1000 } })),
      ).toMatchObject({ code: 406 });
      expect(
        await refusal((probe) => probe.assertQueue(queue, { durable: true, arguments: { ...workQueueArguments(names), 'x-max-length': 1000 } })),
      ).toMatchObject({ code: 406 });
    }
  });

  it('dead-letters a rejected message from either work queue into the dead-letter queue', async () => {
    await channel.purgeQueue(names.deadLetterQueue);
    for (const queue of [names.toolsQueue, names.runsQueue]) {
      channel.sendToQueue(queue, Buffer.from('{}'), { correlationId: queue });
      await channel.waitForConfirms();
      const message = await getOne(queue, false);
      if (!message) throw new Error(`Nothing arrived on ${queue}.`);
      channel.nack(message, false, false);

      const deadLetter = await getOne(names.deadLetterQueue);
      expect(deadLetter && deadLetter.properties.correlationId).toBe(queue);
      expect(deadLetter && deadLetter.properties.headers?.['x-first-death-reason']).toBe('rejected');
    }
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

  it('declares quorum work queues with a delivery limit when asked, idempotently', async () => {
    await declareTopology(url, quorumNames, { queueType: 'quorum', deliveryLimit: 3 });
    await declareTopology(url, quorumNames, { queueType: 'quorum', deliveryLimit: 3 });

    const quorumArguments = { ...workQueueArguments(quorumNames), 'x-queue-type': 'quorum', 'x-delivery-limit': 3 };
    expect(await refusal((probe) => probe.assertQueue(quorumNames.toolsQueue, { durable: true, arguments: quorumArguments }))).toBeUndefined();
    expect(await refusal((probe) => probe.assertQueue(quorumNames.toolsQueue, { durable: true, arguments: workQueueArguments(quorumNames) }))).toMatchObject({
      code: 406,
    });
  });
});

describe('deleteTopology', () => {
  it('removes every queue and exchange declareTopology made', async () => {
    const doomed = rmqNames(`agent-tools-test-doomed-${suffix}`, `agent-runs-test-doomed-${suffix}`);
    await declareTopology(url, doomed);

    await deleteTopology(url, doomed);

    for (const queue of [doomed.toolsQueue, doomed.runsQueue, doomed.deadLetterQueue]) {
      expect(await refusal((probe) => probe.checkQueue(queue))).toMatchObject({ code: 404 });
    }
    for (const exchange of [doomed.deadLetterExchange, doomed.runEventsExchange, doomed.toolsExchange]) {
      expect(await refusal((probe) => probe.checkExchange(exchange))).toMatchObject({ code: 404 });
    }
  });
});
