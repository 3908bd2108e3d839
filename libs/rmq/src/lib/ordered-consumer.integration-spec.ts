import { randomUUID } from 'node:crypto';
import { connect, type ConfirmChannel, type ChannelModel, type ConsumeMessage, type GetMessage } from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { queueCounts, rmqTestUrl, waitUntil } from '../test/rmq-test-broker.js';
import { OrderedConsumer, type MessageSettlement, type OrderedConsumerOptions } from './ordered-consumer.js';
import type { BrokerLogger } from './rmq-connection.js';

const url = rmqTestUrl();
const suffix = randomUUID().slice(0, 8);
const deadLetterExchange = `rmq-test-ordered-dlx-${suffix}`;
const deadLetterQueue = `rmq-test-ordered-dlq-${suffix}`;

const quiet: BrokerLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

type Body = { key: string; n: number; refuse?: boolean };

let admin: ChannelModel;
let channel: ConfirmChannel;
const queues: string[] = [];
const consumers: { close: () => Promise<void> }[] = [];

/** A queue of its own per test, dead-lettering into the shared dead-letter queue. */
const newQueue = async (): Promise<string> => {
  const queue = `rmq-test-ordered-${queues.length}-${suffix}`;
  await channel.assertQueue(queue, { durable: false, arguments: { 'x-dead-letter-exchange': deadLetterExchange } });
  queues.push(queue);
  return queue;
};

const publish = async (queue: string, body: Body | string) => {
  channel.sendToQueue(queue, Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)));
  await channel.waitForConfirms();
};

/** Where every test consumer connects, and what it consumes. */
const connectionOf = (queue: string) => ({
  url,
  connectionName: `rmq-test-ordered-consumer-${consumers.length}-${suffix}`,
  what: `consuming "${queue}"`,
  logger: quiet,
  recovery: { initialMaxRetries: 0 },
  queue,
});

/** A work that waits until the test lets it finish. */
class Gate {
  private open!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.open = resolve));
  release(): void {
    this.open();
  }
}

const newConsumer = (
  queue: string,
  work: (body: Body, message: ConsumeMessage) => Promise<MessageSettlement | null>,
  options: Partial<OrderedConsumerOptions> = {},
): OrderedConsumer => {
  const consumer = new OrderedConsumer({
    ...connectionOf(queue),
    prefetch: 10,
    drainTimeoutMs: 2_000,
    noun: 'test message',
    route: (message) => {
      const body = JSON.parse(message.content.toString()) as Body;
      if (body.refuse) return { ack: false, reason: 'refused unread' };
      return { key: body.key, run: () => work(body, message) };
    },
    ...options,
  });
  consumers.push(consumer);
  return consumer;
};

/** A consumer whose deliveries are items, handed to `together` in groups of at most `max`. */
const newGroupingConsumer = (
  queue: string,
  together: (key: string, items: readonly Body[]) => Promise<readonly (MessageSettlement | null)[]>,
  options: { max: number; parallel?: number; drainTimeoutMs?: number },
): OrderedConsumer<Body> => {
  const consumer = new OrderedConsumer<Body>({
    ...connectionOf(queue),
    prefetch: 50,
    parallel: options.parallel,
    drainTimeoutMs: options.drainTimeoutMs ?? 2_000,
    noun: 'test message',
    route: (message) => {
      const body = JSON.parse(message.content.toString()) as Body;
      return { key: body.key, item: body };
    },
    together: { max: options.max, run: (key, items) => together(key, items) },
  });
  consumers.push(consumer);
  return consumer;
};

const deadLettered = async () => (await channel.checkQueue(deadLetterQueue)).messageCount;

beforeAll(async () => {
  admin = await connect(url);
  channel = await admin.createConfirmChannel();
  await channel.assertExchange(deadLetterExchange, 'fanout', { durable: false });
  await channel.assertQueue(deadLetterQueue, { durable: false });
  await channel.bindQueue(deadLetterQueue, deadLetterExchange, '');
});

afterEach(async () => {
  for (const consumer of consumers.splice(0)) await consumer.close();
  await channel.purgeQueue(deadLetterQueue);
});

afterAll(async () => {
  for (const queue of queues) await channel?.deleteQueue(queue).catch(() => undefined);
  await channel?.deleteQueue(deadLetterQueue).catch(() => undefined);
  await channel?.deleteExchange(deadLetterExchange).catch(() => undefined);
  await admin?.close().catch(() => undefined);
});

describe('OrderedConsumer', () => {
  it("handles one key's messages one after another, in delivery order, while other keys proceed", async () => {
    const queue = await newQueue();
    const seen: string[] = [];
    const firstOfA = new Gate();
    await newConsumer(queue, async ({ key, n }) => {
      seen.push(`start ${key}${n}`);
      if (key === 'a' && n === 1) await firstOfA.opened;
      seen.push(`end ${key}${n}`);
      return { ack: true };
    }).start();

    for (const body of [{ key: 'a', n: 1 }, { key: 'a', n: 2 }, { key: 'b', n: 1 }, { key: 'a', n: 3 }, { key: 'b', n: 2 }]) await publish(queue, body);
    await waitUntil(() => seen.includes('end b2'));
    // a1 is held: b's messages went through meanwhile, a's later ones have not begun.
    expect(seen).toEqual(['start a1', 'start b1', 'end b1', 'start b2', 'end b2']);

    firstOfA.release();
    await waitUntil(() => seen.includes('end a3'));
    expect(seen.filter((line) => line.endsWith('a1') || line.endsWith('a2') || line.endsWith('a3'))).toEqual([
      'start a1',
      'end a1',
      'start a2',
      'end a2',
      'start a3',
      'end a3',
    ]);
  });

  it('acks a message only after its work: unacknowledged while the work runs, gone once it settles', async () => {
    const queue = await newQueue();
    const gate = new Gate();
    let finished = false;
    await newConsumer(queue, async () => {
      await gate.opened;
      finished = true;
      return { ack: true };
    }).start();

    await publish(queue, { key: 'k', n: 1 });
    await waitUntil(async () => (await queueCounts(queue)).unacked === 1, 10_000, 100);
    expect(await queueCounts(queue)).toEqual({ ready: 0, unacked: 1 });

    gate.release();
    await waitUntil(() => finished);
    await waitUntil(async () => (await queueCounts(queue)).unacked === 0, 10_000, 100);
    expect(await queueCounts(queue)).toEqual({ ready: 0, unacked: 0 });
    expect(await deadLettered()).toBe(0);
  }, 30_000);

  it('dead-letters what its work refuses and what it refuses unread, and carries on with the key', async () => {
    const queue = await newQueue();
    const handled: number[] = [];
    await newConsumer(queue, async ({ n }) => {
      handled.push(n);
      return n === 2 ? { ack: false, reason: 'refused by its work' } : { ack: true };
    }).start();

    await publish(queue, { key: 'k', n: 1 });
    await publish(queue, { key: 'k', n: 2 });
    await publish(queue, { key: 'k', n: 0, refuse: true });
    await publish(queue, 'not json');
    await publish(queue, { key: 'k', n: 3 });

    await waitUntil(async () => handled.length === 3 && (await deadLettered()) === 3, 5_000, 50);
    expect(handled).toEqual([1, 2, 3]);
    expect(await deadLettered()).toBe(3);
  });

  it('close() cancels, lets the work in hand finish within drainTimeoutMs, then closes; what did not finish is redelivered', async () => {
    const queue = await newQueue();
    const stuck = new Gate();
    const quick = new Gate();
    const settled: string[] = [];
    const consumer = newConsumer(
      queue,
      async ({ key }) => {
        await (key === 'stuck' ? stuck : quick).opened;
        settled.push(key);
        return { ack: true };
      },
      { drainTimeoutMs: 600 },
    );
    await consumer.start();
    await publish(queue, { key: 'stuck', n: 1 });
    await publish(queue, { key: 'quick', n: 1 });
    await waitUntil(async () => (await queueCounts(queue)).unacked === 2, 10_000, 100);

    const started = Date.now();
    setTimeout(() => quick.release(), 200);
    await consumer.close();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(590);
    expect(took).toBeLessThan(3_000);
    // The quick one finished within the drain and was acked; the stuck one is back in the queue for another consumer.
    expect(settled).toEqual(['quick']);
    let redelivered: GetMessage | false = false;
    await waitUntil(async () => (redelivered = await channel.get(queue, { noAck: true })) !== false, 5_000, 50);
    const message = redelivered as GetMessage | false;
    expect(message && JSON.parse(message.content.toString())).toEqual({ key: 'stuck', n: 1 });
    expect(message && message.fields.redelivered).toBe(true);
    expect(await channel.get(queue, { noAck: true })).toBe(false);
    stuck.release();
  }, 30_000);

  it("aborts the works' signal when close() begins, so a waiting work can leave its message for redelivery", async () => {
    const queue = await newQueue();
    let signal: AbortSignal | undefined;
    const consumer = newConsumer(queue, async () => null, {
      route: () => ({
        key: 'k',
        run: async (closing) => {
          signal = closing;
          await new Promise((resolve) => closing.addEventListener('abort', resolve, { once: true }));
          return null;
        },
      }),
    });
    await consumer.start();
    await publish(queue, { key: 'k', n: 1 });
    await waitUntil(() => signal !== undefined);
    expect(signal?.aborted).toBe(false);

    const started = Date.now();
    await consumer.close();
    expect(signal?.aborted).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_500);
    await waitUntil(async () => (await channel.checkQueue(queue)).messageCount === 1, 5_000, 50);
    expect((await channel.checkQueue(queue)).messageCount).toBe(1);
    expect(await deadLettered()).toBe(0);
  });

  it("hands a key's queued deliveries over together, in order and at most `max` at a time, while other keys proceed", async () => {
    const queue = await newQueue();
    const groups: string[][] = [];
    const firstOfA = new Gate();
    await newGroupingConsumer(
      queue,
      async (key, items) => {
        groups.push(items.map(({ n }) => `${key}${n}`));
        if (key === 'a' && items[0]?.n === 1) await firstOfA.opened;
        return items.map(() => ({ ack: true }));
      },
      { max: 3 },
    ).start();

    await publish(queue, { key: 'a', n: 1 });
    await waitUntil(() => groups.length === 1);
    // While a1 is being handled, a2..a6 queue up behind it; b is not held up by a.
    for (let n = 2; n <= 6; n += 1) await publish(queue, { key: 'a', n });
    await publish(queue, { key: 'b', n: 1 });
    await waitUntil(() => groups.some((group) => group[0] === 'b1'));
    expect(groups).toEqual([['a1'], ['b1']]);

    firstOfA.release();
    await waitUntil(() => groups.flat().includes('a6'));
    expect(groups.filter((group) => group[0]?.startsWith('a'))).toEqual([['a1'], ['a2', 'a3', 'a4'], ['a5', 'a6']]);
    await waitUntil(async () => (await queueCounts(queue)).unacked === 0, 10_000, 100);
    expect(await queueCounts(queue)).toEqual({ ready: 0, unacked: 0 });
  }, 30_000);

  it('settles each delivery of a group by its own outcome: acked, dead-lettered, or left for redelivery', async () => {
    const queue = await newQueue();
    const gate = new Gate();
    const groups: number[][] = [];
    const consumer = newGroupingConsumer(
      queue,
      async (_key, items) => {
        groups.push(items.map(({ n }) => n));
        if (items[0]?.n === 0) {
          await gate.opened;
          return [{ ack: true }];
        }
        return items.map(({ n }) => (n === 2 ? { ack: false, reason: 'refused by its work' } : n === 3 ? null : { ack: true }));
      },
      { max: 10 },
    );
    await consumer.start();
    await publish(queue, { key: 'k', n: 0 });
    await waitUntil(() => groups.length === 1);
    for (const n of [1, 2, 3, 4]) await publish(queue, { key: 'k', n });
    await waitUntil(async () => (await queueCounts(queue)).unacked === 5, 10_000, 100);
    gate.release();

    await waitUntil(async () => groups.length === 2 && (await deadLettered()) === 1 && (await queueCounts(queue)).unacked === 1, 10_000, 100);
    expect(groups).toEqual([[0], [1, 2, 3, 4]]);
    expect(await deadLettered()).toBe(1);
    // 3 is neither acked nor refused: still in hand, and back in the queue once the consumer goes.
    expect(await queueCounts(queue)).toEqual({ ready: 0, unacked: 1 });
    await consumer.close();
    const redelivered = await channel.get(queue, { noAck: true });
    expect(redelivered && JSON.parse(redelivered.content.toString())).toEqual({ key: 'k', n: 3 });
    expect(await channel.get(queue, { noAck: true })).toBe(false);
  }, 30_000);

  it('a group whose handler fails, or answers for the wrong number of deliveries, is left whole for redelivery', async () => {
    const queue = await newQueue();
    const gate = new Gate();
    const consumer = newGroupingConsumer(
      queue,
      async (_key, items) => {
        if (items[0]?.n === 0) {
          await gate.opened;
          return [{ ack: true }];
        }
        if (items[0]?.n === 1) throw new Error('the database went away');
        return [{ ack: true }];
      },
      { max: 2 },
    );
    await consumer.start();
    await publish(queue, { key: 'k', n: 0 });
    for (const n of [1, 2, 3, 4]) await publish(queue, { key: 'k', n });
    await waitUntil(async () => (await queueCounts(queue)).unacked === 5, 10_000, 100);
    gate.release();
    // [1, 2] throws, [3, 4] gets one settlement for two: none of the four is settled.
    await waitUntil(async () => (await queueCounts(queue)).unacked === 4, 10_000, 100);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await queueCounts(queue)).toEqual({ ready: 0, unacked: 4 });
    expect(await deadLettered()).toBe(0);
    await consumer.close();
    await waitUntil(async () => (await channel.checkQueue(queue)).messageCount === 4, 5_000, 50);
    expect((await channel.checkQueue(queue)).messageCount).toBe(4);
  }, 30_000);

  it('works on at most `parallel` keys at once; a key waiting for its turn gathers its deliveries into one group', async () => {
    const queue = await newQueue();
    const gate = new Gate();
    const groups: string[][] = [];
    let running = 0;
    let mostRunning = 0;
    await newGroupingConsumer(
      queue,
      async (key, items) => {
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        groups.push(items.map(({ n }) => `${key}${n}`));
        if (key === 'a') await gate.opened;
        running -= 1;
        return items.map(() => ({ ack: true }));
      },
      { max: 10, parallel: 1 },
    ).start();

    await publish(queue, { key: 'a', n: 1 });
    await waitUntil(() => groups.length === 1);
    for (const n of [1, 2, 3]) await publish(queue, { key: 'b', n });
    await waitUntil(async () => (await queueCounts(queue)).unacked === 4, 10_000, 100);
    expect(groups).toEqual([['a1']]);

    gate.release();
    await waitUntil(() => groups.length === 2);
    expect(groups).toEqual([['a1'], ['b1', 'b2', 'b3']]);
    expect(mostRunning).toBe(1);
  }, 30_000);

  it('refuses a together handler or a parallel bound that is not a positive integer', () => {
    const base = { url, connectionName: 'unused', what: 'unused', logger: quiet, queue: 'unused', prefetch: 1, drainTimeoutMs: 0, noun: 'x' };
    const route = () => ({ ack: true }) as const;
    expect(() => new OrderedConsumer<Body>({ ...base, route, together: { max: 0, run: async () => [] } })).toThrow(/together\.max must be a positive integer/);
    expect(() => new OrderedConsumer({ ...base, route, parallel: 0 })).toThrow(/parallel must be a positive integer/);
  });

  it('fails to start, naming the broker reason, when its queue does not exist', async () => {
    const consumer = newConsumer(`missing-${suffix}`, async () => ({ ack: true }), { what: 'consuming a missing queue' });
    await expect(consumer.start()).rejects.toThrow(/^Could not start consuming a missing queue: .*NOT_FOUND/);
  });
});
