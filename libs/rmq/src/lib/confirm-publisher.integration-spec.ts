import { randomUUID } from 'node:crypto';
import { connect, type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeConnectionByName, rmqTestUrl, waitUntil } from '../test/rmq-test-broker.js';
import { ConfirmPublishError, ConfirmPublisher, type ConfirmPublisherOptions } from './confirm-publisher.js';
import type { BrokerLogger } from './rmq-connection.js';

const url = rmqTestUrl();
const suffix = randomUUID().slice(0, 8);
const queue = `rmq-test-confirm-${suffix}`;
const exchange = `rmq-test-confirm-x-${suffix}`;

/** What the publishers logged, to know when one has seen its connection go. */
const lines: string[] = [];
const recording: BrokerLogger = {
  log: (message: string) => lines.push(`log ${message}`),
  warn: (message: string) => lines.push(`warn ${message}`),
  error: (message: string) => lines.push(`error ${message}`),
};

let admin: ChannelModel;
let channel: Channel;
const publishers: ConfirmPublisher[] = [];

const newPublisher = (options: Partial<ConfirmPublisherOptions> = {}): ConfirmPublisher => {
  const publisher = new ConfirmPublisher({
    url,
    connectionName: `rmq-test-confirm-publisher-${publishers.length}-${suffix}`,
    what: `publishing to "${queue}"`,
    logger: recording,
    recovery: { initialMaxRetries: 0 },
    check: (confirmChannel) => confirmChannel.checkQueue(queue),
    ...options,
  });
  publishers.push(publisher);
  return publisher;
};

const failureOf = (publish: Promise<void>) =>
  publish.then(
    () => 'confirmed',
    (error: unknown) => (error instanceof ConfirmPublishError ? error.failure : `not a ConfirmPublishError: ${String(error)}`),
  );

/** A started publisher whose connection the broker has just closed (and it has seen go); it reconnects after reconnectDelayMs. */
const droppedPublisher = async (name: string, reconnectDelayMs: number, options: Partial<ConfirmPublisherOptions> = {}) => {
  const connectionName = `rmq-test-confirm-${name}-${suffix}`;
  const publisher = newPublisher({
    connectionName,
    recovery: { initialMaxRetries: 0, initialDelay: reconnectDelayMs, maxDelay: reconnectDelayMs },
    ...options,
  });
  await publisher.start();
  await closeConnectionByName(connectionName);
  await waitUntil(() => lines.some((line) => line.startsWith('warn Disconnected from RabbitMQ')), 5_000);
  return publisher;
};

const body = (text: string) => Buffer.from(JSON.stringify({ text }));
const queued = async () => {
  const texts: string[] = [];
  for (let message = await channel.get(queue, { noAck: true }); message; message = await channel.get(queue, { noAck: true })) {
    texts.push((JSON.parse(message.content.toString()) as { text: string }).text);
  }
  return texts;
};

beforeAll(async () => {
  admin = await connect(url);
  channel = await admin.createChannel();
  await channel.assertQueue(queue, { durable: true });
  await channel.assertExchange(exchange, 'direct', { durable: false, autoDelete: false });
  await channel.bindQueue(queue, exchange, 'bound');
});

afterEach(async () => {
  for (const publisher of publishers.splice(0)) await publisher.close();
  await channel.purgeQueue(queue);
  lines.length = 0;
});

afterAll(async () => {
  await channel?.deleteQueue(queue).catch(() => undefined);
  await channel?.deleteExchange(exchange).catch(() => undefined);
  await admin?.close().catch(() => undefined);
});

describe('ConfirmPublisher', () => {
  it('resolves once the broker has taken the message: it is in the queue, persistent, by then', async () => {
    const publisher = newPublisher();
    await publisher.start();

    await publisher.publish('', queue, body('first'), { messageId: 'm-1', type: 'kind', contentType: 'application/json' });

    const message = await channel.get(queue, { noAck: true });
    expect(message && JSON.parse(message.content.toString())).toEqual({ text: 'first' });
    expect(message && message.properties).toMatchObject({ deliveryMode: 2, messageId: 'm-1', type: 'kind', contentType: 'application/json' });
  });

  it('does not resolve without the confirm: one that never comes rejects after confirmTimeoutMs', async () => {
    let captured: ConfirmChannel | undefined;
    const publisher = newPublisher({
      confirmTimeoutMs: 300,
      check: (confirmChannel) => {
        captured = confirmChannel;
        return confirmChannel.checkQueue(queue);
      },
    });
    await publisher.start();
    const confirmChannel = captured as ConfirmChannel;
    // The message goes out, but its confirm is never handed back to the publisher.
    const publish = confirmChannel.publish.bind(confirmChannel);
    confirmChannel.publish = (target, routingKey, content, options) => publish(target, routingKey, content, options);

    const started = Date.now();
    expect(await failureOf(publisher.publish('', queue, body('unconfirmed')))).toBe('timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('rejects a message no queue takes (mandatory) and stores nothing; one sent not mandatory is confirmed and dropped', async () => {
    const publisher = newPublisher();
    await publisher.start();

    expect(await failureOf(publisher.publish(exchange, 'nowhere', body('lost')))).toBe('unroutable');
    await expect(publisher.publish(exchange, 'nowhere', body('lost'))).rejects.toThrow(`no queue is bound to "${exchange}" under "nowhere"`);
    expect(await failureOf(publisher.publish(exchange, 'nowhere', body('dropped'), { mandatory: false }))).toBe('confirmed');
    expect(await failureOf(publisher.publish(exchange, 'bound', body('routed')))).toBe('confirmed');

    expect(await queued()).toEqual(['routed']);
  });

  it('fails a publish at once while the broker is unreachable instead of buffering it: nothing arrives after the reconnection', async () => {
    const publisher = await droppedPublisher('down', 1_500);
    const started = Date.now();
    expect(await failureOf(publisher.publish('', queue, body('while down')))).toBe('disconnected');
    expect(Date.now() - started).toBeLessThan(200);

    let after = 'not tried';
    await waitUntil(async () => (after = await failureOf(publisher.publish('', queue, body('after')))) === 'confirmed', 10_000, 100);
    expect(after).toBe('confirmed');
    expect(await queued()).toEqual(['after']);
  }, 20_000);

  it('with reconnectWaitMs, a publish made while disconnected waits for the reconnection and then goes through', async () => {
    const publisher = await droppedPublisher('wait', 300, { reconnectWaitMs: 5_000 });
    expect(await failureOf(publisher.publish('', queue, body('waited')))).toBe('confirmed');
    expect(await queued()).toEqual(['waited']);
  }, 20_000);

  it('close() fails the publishes waiting for a connection, and every later one, as closed', async () => {
    const publisher = await droppedPublisher('close', 5_000, { reconnectWaitMs: 10_000 });
    const waiting = failureOf(publisher.publish('', queue, body('waiting')));
    await publisher.close();

    expect(await waiting).toBe('closed');
    expect(await failureOf(publisher.publish('', queue, body('after close')))).toBe('closed');
    expect(await queued()).toEqual([]);
  }, 20_000);

  it('fails to start, naming the broker reason, when what it publishes to does not exist or the broker cannot be reached', async () => {
    const missing = newPublisher({ what: 'publishing to a missing queue', check: (confirmChannel) => confirmChannel.checkQueue(`missing-${suffix}`) });
    await expect(missing.start()).rejects.toThrow(/^Could not start publishing to a missing queue: .*NOT_FOUND/);

    const unreachable = newPublisher({ url: 'amqp://someone:secret@127.0.0.1:1', what: 'publishing nowhere' });
    const failure = await unreachable.start().then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(failure).toMatch(/^Could not start publishing nowhere: .*ECONNREFUSED/);
    expect(failure).not.toContain('secret');
  });

  it('recycles a confirm channel that nacks every publish and sends the message again, same id, on a new one', async () => {
    const poisoned = await poisonedPublisher();

    expect(await failureOf(poisoned.publisher.publish('', queue, body('after nack'), { messageId: 'm-nacked' }))).toBe('confirmed');

    expect(poisoned.nacked).toBeGreaterThanOrEqual(1);
    expect(poisoned.publisher.recycledChannels).toBe(1);
    const message = await channel.get(queue, { noAck: true });
    expect(message && message.properties.messageId).toBe('m-nacked');
    expect(await queued()).toEqual([]);
  });

  it('sabotage: without the recycle, a channel poisoned like that fails every publish until the deadline', async () => {
    const poisoned = await poisonedPublisher();
    // The old behaviour: a nack leaves the channel as it is.
    (poisoned.publisher as unknown as { recycle: () => void }).recycle = () => undefined;

    expect(await failureOf(poisoned.publisher.publish('', queue, body('never')))).toBe('refused');
    expect(poisoned.nacked).toBeGreaterThan(1);
    expect(await queued()).toEqual([]);
  }, 20_000);

  it('resends a publish a full reject-publish queue nacks, and it is stored once when room is made', async () => {
    const full = `rmq-test-confirm-full-${suffix}`;
    await channel.assertQueue(full, { durable: true, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } });
    try {
      const publisher = newPublisher({ confirmTimeoutMs: 10_000, check: (confirmChannel) => confirmChannel.checkQueue(full) });
      await publisher.start();
      await publisher.publish('', full, body('fills it'));

      const second = failureOf(publisher.publish('', full, body('waits for room'), { messageId: 'm-second' }));
      await waitUntil(() => publisher.recycledChannels >= 1, 5_000);
      expect(await channel.get(full, { noAck: true })).toMatchObject({ content: body('fills it') });

      expect(await second).toBe('confirmed');
      const stored = await channel.get(full, { noAck: true });
      expect(stored && stored.properties.messageId).toBe('m-second');
      expect(await channel.get(full, { noAck: true })).toBe(false);
    } finally {
      await channel.deleteQueue(full);
    }
  });

  it('gives up on a queue that keeps refusing once confirmTimeoutMs has passed since the first send', async () => {
    const full = `rmq-test-confirm-stays-full-${suffix}`;
    await channel.assertQueue(full, { durable: true, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } });
    try {
      const publisher = newPublisher({ confirmTimeoutMs: 600, check: (confirmChannel) => confirmChannel.checkQueue(full) });
      await publisher.start();
      await publisher.publish('', full, body('fills it'));
      const started = Date.now();
      expect(await failureOf(publisher.publish('', full, body('no room')))).toMatch(/refused|timeout/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(550);
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      await channel.deleteQueue(full);
    }
  });
});

/** A started publisher whose first channel nacks every publish without sending it (a channel opened mid-election). */
const poisonedPublisher = async () => {
  const state = { nacked: 0, publisher: undefined as unknown as ConfirmPublisher };
  let first = true;
  state.publisher = newPublisher({
    confirmTimeoutMs: 1_500,
    check: (confirmChannel) => {
      if (first) {
        first = false;
        confirmChannel.publish = (_exchange, _routingKey, _content, _options, callback) => {
          state.nacked += 1;
          setImmediate(() => callback?.(new Error('message nacked'), {} as never));
          return true;
        };
      }
      return confirmChannel.checkQueue(queue);
    },
  });
  await state.publisher.start();
  return state;
};
