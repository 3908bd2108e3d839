import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel, type ConsumeMessage } from 'amqplib';
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
  const channel = await responder.createChannel();
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
});
