import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeConnectionByName, rmqTestUrl, waitUntil } from '../test/rmq-test-broker.js';
import { rmqNames } from './rmq-names.js';
import { RmqRpcClient, RmqRpcError } from './rmq-rpc-client.js';
import { declareTopology, deleteTopology } from './rmq-topology.js';

const url = rmqTestUrl();
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-test-rpc-${suffix}`, `agent-runs-test-rpc-${suffix}`);
const clientConnectionName = `rmq-test-rpc-client-${suffix}`;
const user = new URL(url).username || 'guest';

let responder: ChannelModel;
let responderChannel: ConfirmChannel | undefined;
/** Requests the responder holds without answering, to leave a call in flight. */
const held: ConsumeMessage[] = [];
let client: RmqRpcClient;

const failureOf = (call: Promise<unknown>) =>
  call.then(
    () => 'answered',
    (error: unknown) => (error instanceof RmqRpcError ? error.failure : `not an RmqRpcError: ${String(error)}`),
  );

beforeAll(async () => {
  await declareTopology(url, names);
  responder = await connect(url);
  const channel = await responder.createConfirmChannel();
  responderChannel = channel;
  await channel.consume(
    names.toolsQueue,
    (message) => {
      if (!message) return;
      const { pattern, data, id } = JSON.parse(message.content.toString()) as { pattern: string; data: unknown; id: string };
      if (pattern === 'hold') {
        held.push(message);
        return;
      }
      const reply = { id, response: { data, userId: message.properties.userId, expiration: message.properties.expiration }, isDisposed: true };
      channel.sendToQueue(message.properties.replyTo, Buffer.from(JSON.stringify(reply)), { correlationId: message.properties.correlationId });
    },
    { noAck: true },
  );
  client = new RmqRpcClient({
    url,
    exchange: names.toolsExchange,
    routingKey: names.toolsQueue,
    userId: user,
    connectionName: clientConnectionName,
    reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
  });
  await client.connect(5_000);
});

afterAll(async () => {
  await client?.close();
  await responder?.close().catch(() => undefined);
  await deleteTopology(url, names);
});

describe('RmqRpcClient', () => {
  it('a timeout of a fractional millisecond count still calls (the broker closes the channel on a fractional expiration)', async () => {
    expect(await client.call('echo', { n: 2 }, 2_999.6)).toEqual({ data: { n: 2 }, userId: user, expiration: '3000' });
  });

  it('publishes through the exchange with user_id and an expiration equal to the timeout, and resolves with the response', async () => {
    expect(await client.call('echo', { n: 1 }, 3_000)).toEqual({ data: { n: 1 }, userId: user, expiration: '3000' });
  });

  it('fails a call in flight at once when the connection is lost, not at its timeout, then reconnects and answers the next call', async () => {
    // A timeout far beyond the test's own: only failing on the loss can settle the call in time.
    const inFlight = failureOf(client.call('hold', {}, 120_000));
    await waitUntil(() => held.length === 1);

    await closeConnectionByName(clientConnectionName);

    expect(await inFlight).toBe('unreachable');
    let answer: unknown;
    await waitUntil(async () => {
      answer = await client.call('echo', { after: 'reconnect' }, 1_000).catch(() => undefined);
      return answer !== undefined;
    }, 8_000, 200);
    expect(answer).toMatchObject({ data: { after: 'reconnect' } });
  }, 40_000);

  it('fails at once a call no queue can take (the exchange routes it nowhere)', async () => {
    const unbound = new RmqRpcClient({ url, exchange: names.toolsExchange, routingKey: `nowhere-${suffix}`, userId: user });
    await unbound.connect(5_000);
    try {
      const started = Date.now();
      expect(await failureOf(unbound.call('echo', {}, 10_000))).toBe('unreachable');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await unbound.close();
    }
  });

  it('refuses to start against an exchange that does not exist, naming the broker reason', async () => {
    const missing = new RmqRpcClient({ url, exchange: `missing-${suffix}`, routingKey: names.toolsQueue, userId: user });
    try {
      await expect(missing.connect(1_500)).rejects.toThrow(/no connection within 1500 ms: .*NOT_FOUND/);
    } finally {
      await missing.close();
    }
  });

  it('replaces a channel the broker nacks and publishes the call again on a new one, while a call in flight on the old one still gets its reply', async () => {
    const poisonable = new PoisonableClient({ url, exchange: names.toolsExchange, routingKey: names.toolsQueue, userId: user });
    await poisonable.connect(5_000);
    held.length = 0;
    try {
      const inFlight = poisonable.call('hold', { n: 'held' }, 10_000);
      await waitUntil(() => held.length === 1);
      poisonable.poisoned = true;

      expect(await poisonable.call('echo', { n: 'after nack' }, 5_000)).toMatchObject({ data: { n: 'after nack' } });
      expect(poisonable.nacked).toBe(1);
      expect(poisonable.replacedChannels).toBe(1);

      // The held request is answered now, to the reply-to address of the channel that was replaced.
      const request = held.shift() as ConsumeMessage;
      const { id } = JSON.parse(request.content.toString()) as { id: string };
      const reply = { id, response: { data: 'late' }, isDisposed: true };
      responderChannel?.sendToQueue(request.properties.replyTo, Buffer.from(JSON.stringify(reply)), { correlationId: request.properties.correlationId });
      expect(await inFlight).toEqual({ data: 'late' });
    } finally {
      await poisonable.close();
    }
  });

  it('a call into a queue that refuses publishes (full, reject-publish) is sent again until there is room, and answered', async () => {
    const full = `rmq-test-rpc-full-${suffix}`;
    const admin = await connect(url);
    const channel = await admin.createConfirmChannel();
    await channel.assertExchange(`${full}.x`, 'direct', { durable: false });
    await channel.assertQueue(full, { durable: true, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } });
    await channel.bindQueue(full, `${full}.x`, full);
    const fullClient = new RmqRpcClient({ url, exchange: `${full}.x`, routingKey: full, userId: user });
    try {
      await fullClient.connect(5_000);
      channel.sendToQueue(full, Buffer.from('{}'));
      await channel.waitForConfirms();

      const answered = fullClient.call('echo', { n: 'waited for room' }, 10_000);
      await waitUntil(() => fullClient.replacedChannels >= 1, 5_000);
      await channel.consume(full, (message) => {
        if (!message) return;
        if (message.properties.replyTo) {
          const { id, data } = JSON.parse(message.content.toString()) as { id: string; data: unknown };
          channel.sendToQueue(message.properties.replyTo, Buffer.from(JSON.stringify({ id, response: data, isDisposed: true })), {
            correlationId: message.properties.correlationId,
          });
        }
        channel.ack(message);
      });
      expect(await answered).toEqual({ n: 'waited for room' });
    } finally {
      await fullClient.close();
      await channel.deleteQueue(full).catch(() => undefined);
      await channel.deleteExchange(`${full}.x`).catch(() => undefined);
      await admin.close().catch(() => undefined);
    }
  });

  it('sabotage: published without confirms, as before, a call into that full queue is dropped without a word', async () => {
    const full = `rmq-test-rpc-unconfirmed-${suffix}`;
    const admin = await connect(url);
    const channel = await admin.createChannel();
    try {
      await channel.assertQueue(full, { durable: true, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } });
      channel.sendToQueue(full, Buffer.from('filler'));
      // The plain publish the client used to make (its reply-to left out: this channel awaits no reply): accepted by
      // amqplib, refused by the queue, reported to nobody.
      expect(channel.sendToQueue(full, Buffer.from('call'), { correlationId: 'c-1', expiration: '10000' })).toBe(true);
      await waitUntil(async () => (await channel.checkQueue(full)).messageCount === 1, 1_000);
      const kept = [];
      for (let message = await channel.get(full, { noAck: true }); message; message = await channel.get(full, { noAck: true })) kept.push(message.content.toString());
      expect(kept).toEqual(['filler']);
    } finally {
      await channel.deleteQueue(full).catch(() => undefined);
      await admin.close().catch(() => undefined);
    }
  });
});

/** A client whose channel, once poisoned, nacks the next publish without sending it (a channel opened mid-election). */
class PoisonableClient extends RmqRpcClient {
  poisoned = false;
  nacked = 0;

  protected override async createChannel(model: ChannelModel): Promise<ConfirmChannel> {
    const channel = await model.createConfirmChannel();
    const publish = channel.publish.bind(channel);
    const first = this.nacked === 0 && !this.poisoned;
    channel.publish = (exchange, routingKey, content, options, callback) => {
      if (!first || !this.poisoned) return publish(exchange, routingKey, content, options, callback);
      this.nacked += 1;
      setImmediate(() => callback?.(new Error('message nacked'), {} as never));
      return true;
    };
    return channel;
  }
}
