import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type GetMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteBrokerAccess, permissionsOf, rabbitmqctl, rmqTestUrl, rmqTestUrlFor, waitUntil } from '../test/rmq-test-broker.js';
import { AckAfterReplyTransport, PUBLISHER_REFUSED_ERROR, type AckAfterReplyTransportOptions } from './ack-after-reply.transport.js';
import { brokerCredentialsOf, brokerPermissions, setupBroker, type BrokerAccessInput } from './rmq-access.js';
import { DIRECT_REPLY_TO, rmqNames, runEventsIngestQueue, runsDeadLetterQueue } from './rmq-names.js';
import { RmqRpcClient } from './rmq-rpc-client.js';

// A vhost and two users of this file's own, made by the project's setup exactly as `npm run rmq:setup` makes them.
const suffix = randomUUID().slice(0, 8);
const vhost = `naalya-test-${suffix}`;
const serverUser = { name: `naalya_server_test_${suffix}`, password: `server-${suffix}` };
const workerUser = { name: `naalya_worker_test_${suffix}`, password: `worker-${suffix}` };
const admin = brokerCredentialsOf(rmqTestUrl());
const names = rmqNames(`agent-tools-test-${suffix}`, `agent-runs-test-${suffix}`);
const input: BrokerAccessInput = {
  adminUrl: rmqTestUrlFor(admin.user, admin.password, vhost),
  serverUrl: rmqTestUrlFor(serverUser.name, serverUser.password, vhost),
  workerUrl: rmqTestUrlFor(workerUser.name, workerUser.password, vhost),
  names,
};
const ingestQueue = runEventsIngestQueue(names);
const runsDeadLetters = runsDeadLetterQueue(names);

const quietLogger = { log: () => undefined, error: () => undefined, warn: () => undefined, debug: () => undefined, verbose: () => undefined };

let adminConnection: ChannelModel;
let inspector: ConfirmChannel;
const connections: ChannelModel[] = [];

const open = async (url: string): Promise<ChannelModel> => {
  const connection = await connect(url);
  connection.on('error', () => undefined);
  connections.push(connection);
  return connection;
};

/** The broker's refusal of one operation on a fresh channel (a refusal closes the channel), or undefined if allowed. */
const refusal = async (url: string, operation: (channel: Channel) => Promise<unknown>): Promise<{ code?: number; message: string } | undefined> => {
  const channel = await (await open(url)).createChannel();
  channel.on('error', () => undefined);
  try {
    await operation(channel);
    return undefined;
  } catch (error) {
    return error as { code?: number; message: string };
  }
};

/** A publish is refused asynchronously: the broker closes the channel. Resolves with that error, or undefined if the channel stays open. */
const publishRefusal = async (url: string, publish: (channel: Channel) => void): Promise<Error | undefined> => {
  const channel = await (await open(url)).createChannel();
  const closed = new Promise<Error>((resolve) => channel.once('error', resolve));
  publish(channel);
  return Promise.race([closed, sleep(1_000).then(() => undefined)]);
};

const readyCount = async (queue: string) => (await inspector.checkQueue(queue)).messageCount;

const drain = async (queue: string): Promise<GetMessage[]> => {
  const messages: GetMessage[] = [];
  for (let message = await inspector.get(queue, { noAck: true }); message; message = await inspector.get(queue, { noAck: true })) messages.push(message);
  return messages;
};

const startTransport = async (options: Partial<AckAfterReplyTransportOptions> & Pick<AckAfterReplyTransportOptions, 'url' | 'queue'>) => {
  const transport = new AckAfterReplyTransport({
    prefetch: 4,
    deadLetterExchange: names.deadLetterExchange,
    handlerTimeoutMs: 5_000,
    drainTimeoutMs: 1_000,
    logger: quietLogger,
    reconnect: { startupRetries: 0 },
    ...options,
  });
  const runs: unknown[] = [];
  transport.addHandler('echo.thing', async (data: unknown) => {
    runs.push(data);
    return { echoed: data };
  });
  transport.addHandler('run.event', async (data: unknown) => void runs.push(data), true);
  await new Promise<void>((resolve, reject) => transport.listen((error?: unknown) => (error ? reject(error) : resolve())));
  return { transport, runs };
};

beforeAll(async () => {
  await setupBroker(input, { kind: 'rabbitmqctl' });
  adminConnection = await open(input.adminUrl);
  inspector = await adminConnection.createConfirmChannel();
}, 60_000);

afterAll(async () => {
  for (const connection of connections) await connection.close().catch(() => undefined);
  await deleteBrokerAccess(vhost, [serverUser.name, workerUser.name]);
}, 30_000);

describe("the worker's broker user", () => {
  it('cannot consume or get from the tools queue (ACCESS_REFUSED)', async () => {
    expect(await refusal(input.workerUrl, (channel) => channel.consume(names.toolsQueue, () => undefined))).toMatchObject({ code: 403 });
    expect(await refusal(input.workerUrl, (channel) => channel.get(names.toolsQueue))).toMatchObject({ code: 403 });
  });

  it('cannot publish a reply: a publish to the default exchange (amq.default) is refused and reaches no queue', async () => {
    await inspector.purgeQueue(names.toolsQueue);
    const refused = await publishRefusal(input.workerUrl, (channel) =>
      channel.sendToQueue(names.toolsQueue, Buffer.from('{}'), { userId: workerUser.name, correlationId: 'via-default' }),
    );

    expect(refused?.message).toMatch(/ACCESS_REFUSED - access to exchange 'amq\.default'/);
    expect(await readyCount(names.toolsQueue)).toBe(0);
  });

  it("cannot publish with another user's user_id (PRECONDITION_FAILED), so it cannot pass for the server or anyone else", async () => {
    await inspector.purgeQueue(names.toolsQueue);
    const refused = await publishRefusal(input.workerUrl, (channel) =>
      channel.publish(names.toolsExchange, names.toolsQueue, Buffer.from('{}'), { userId: serverUser.name }),
    );

    expect(refused?.message).toMatch(/PRECONDITION_FAILED - user_id property set to/);
    expect(await readyCount(names.toolsQueue)).toBe(0);
  });

  it('declares, binds and deletes nothing: configuring anything is refused', async () => {
    expect(await refusal(input.workerUrl, (channel) => channel.assertExchange(names.toolsExchange, 'direct', { durable: true }))).toMatchObject({ code: 403 });
    expect(await refusal(input.workerUrl, (channel) => channel.assertQueue('', { exclusive: true }))).toMatchObject({ code: 403 });
    expect(await refusal(input.workerUrl, (channel) => channel.bindQueue(names.runsQueue, names.toolsExchange, names.runsQueue))).toMatchObject({ code: 403 });
    expect(await refusal(input.workerUrl, (channel) => channel.deleteQueue(names.toolsQueue))).toMatchObject({ code: 403 });
  });

  it('cannot read the run events it publishes, nor either dead-letter queue, nor write the dead-letter exchange', async () => {
    expect(await refusal(input.workerUrl, (channel) => channel.get(ingestQueue))).toMatchObject({ code: 403 });
    expect(await refusal(input.workerUrl, (channel) => channel.get(names.deadLetterQueue))).toMatchObject({ code: 403 });
    expect(await refusal(input.workerUrl, (channel) => channel.get(runsDeadLetters))).toMatchObject({ code: 403 });
    expect((await publishRefusal(input.workerUrl, (channel) => channel.publish(names.deadLetterExchange, '', Buffer.from('{}'))))?.message).toMatch(/ACCESS_REFUSED/);
  });

  it('publishes run events to the run events exchange, which the server reads from the ingest queue', async () => {
    await inspector.purgeQueue(ingestQueue);
    const channel = await (await open(input.workerUrl)).createConfirmChannel();
    channel.publish(names.runEventsExchange, 'run-1', Buffer.from('{"type":"RUN_STARTED"}'), { userId: workerUser.name });
    await channel.waitForConfirms();

    const server = await (await open(input.serverUrl)).createChannel();
    let message: GetMessage | false = false;
    await waitUntil(async () => (message = await server.get(ingestQueue, { noAck: true })) !== false);
    expect(message && (message as GetMessage).properties.userId).toBe(workerUser.name);
  });
});

describe("the server's broker user", () => {
  it('cannot publish to the tools exchange or the run events exchange: it writes only the default exchange', async () => {
    expect((await publishRefusal(input.serverUrl, (channel) => channel.publish(names.toolsExchange, names.toolsQueue, Buffer.from('{}'))))?.message).toMatch(
      /ACCESS_REFUSED - access to exchange '.*\.calls'/,
    );
    expect((await publishRefusal(input.serverUrl, (channel) => channel.publish(names.runEventsExchange, 'run-1', Buffer.from('{}'))))?.message).toMatch(
      /ACCESS_REFUSED/,
    );
  });

  it('cannot consume the runs queue, and declares nothing', async () => {
    expect(await refusal(input.serverUrl, (channel) => channel.get(names.runsQueue))).toMatchObject({ code: 403 });
    expect(await refusal(input.serverUrl, (channel) => channel.assertQueue(names.toolsQueue, { durable: true }))).toMatchObject({ code: 403 });
  });

  it("consumes the run steps the worker rejected, from the runs dead-letter queue, but not the general dead letters", async () => {
    await inspector.purgeQueue(names.runsQueue);
    await inspector.purgeQueue(runsDeadLetters);
    const server = await (await open(input.serverUrl)).createConfirmChannel();
    server.sendToQueue(names.runsQueue, Buffer.from('{"pattern":"run.event","data":{}}'), { correlationId: 'rejected-step' });
    await server.waitForConfirms();
    const worker = await (await open(input.workerUrl)).createChannel();
    let step: GetMessage | false = false;
    await waitUntil(async () => (step = await worker.get(names.runsQueue, { noAck: false })) !== false);
    if (!step) throw new Error('The step did not reach the worker.');
    worker.nack(step, false, false);

    const consumed: ConsumeMessage[] = [];
    const { consumerTag } = await server.consume(runsDeadLetters, (message) => message && consumed.push(message), { noAck: true });
    await waitUntil(() => consumed.length === 1);
    await server.cancel(consumerTag);
    expect(consumed.map((message) => message.properties.correlationId)).toEqual(['rejected-step']);
    expect(await refusal(input.serverUrl, (channel) => channel.get(names.deadLetterQueue))).toMatchObject({ code: 403 });
  });

  it('reads the depth of both dead-letter queues with a passive declare, which needs no permission', async () => {
    await inspector.purgeQueue(names.deadLetterQueue);
    inspector.publish(names.deadLetterExchange, '', Buffer.from('{}'));
    await inspector.waitForConfirms();
    const server = await (await open(input.serverUrl)).createChannel();

    expect(await server.checkQueue(names.deadLetterQueue)).toMatchObject({ messageCount: 1 });
    expect(await server.checkQueue(runsDeadLetters)).toMatchObject({ messageCount: 0 });
    await inspector.purgeQueue(names.deadLetterQueue);
  });

  it('puts a run on the runs queue through the default exchange, which the worker consumes', async () => {
    await inspector.purgeQueue(names.runsQueue);
    const channel = await (await open(input.serverUrl)).createConfirmChannel();
    channel.sendToQueue(names.runsQueue, Buffer.from('{"pattern":"run.event","data":{}}'));
    await channel.waitForConfirms();

    const worker = await (await open(input.workerUrl)).createChannel();
    let message: GetMessage | false = false;
    await waitUntil(async () => (message = await worker.get(names.runsQueue, { noAck: true })) !== false);
    expect(message).not.toBe(false);
  });
});

describe('a tool call across the hop, each side as its own broker user', () => {
  let server: Awaited<ReturnType<typeof startTransport>>;
  let client: RmqRpcClient;

  beforeAll(async () => {
    server = await startTransport({ url: input.serverUrl, queue: names.toolsQueue, requireUserId: workerUser.name });
    client = new RmqRpcClient({ url: input.workerUrl, exchange: names.toolsExchange, routingKey: names.toolsQueue, userId: workerUser.name });
    await client.connect(5_000);
  });

  afterAll(async () => {
    await client?.close();
    await server?.transport.close();
  });

  it("the worker's call through the tools exchange is run and answered through its direct reply-to", async () => {
    const runsBefore = server.runs.length;

    expect(await client.call('echo.thing', { n: 1 }, 5_000)).toEqual({ echoed: { n: 1 } });
    expect(server.runs.length).toBe(runsBefore + 1);
  });

  it("a call published by the server's own user (the one other user that can reach the tools queue) is refused, dead-lettered and runs nothing", async () => {
    await inspector.purgeQueue(names.deadLetterQueue);
    const runsBefore = server.runs.length;
    // The server's user reaches the tools queue through the default exchange; it needs a reply queue it may read.
    const forger = await (await open(input.serverUrl)).createChannel();
    const replies: ConsumeMessage[] = [];
    await forger.consume(DIRECT_REPLY_TO, (message) => message && replies.push(message), { noAck: true });
    forger.sendToQueue(names.toolsQueue, Buffer.from(JSON.stringify({ pattern: 'echo.thing', data: { forged: true }, id: 'forged' })), {
      userId: serverUser.name,
      replyTo: DIRECT_REPLY_TO,
      correlationId: 'forged',
    });

    await waitUntil(async () => (await readyCount(names.deadLetterQueue)) === 1 && replies.length === 1);
    const deadLetters = await drain(names.deadLetterQueue);
    expect(deadLetters.map((message) => message.properties.correlationId)).toEqual(['forged']);
    expect(JSON.parse(replies[0]?.content.toString() ?? '{}')).toEqual({ id: 'forged', err: { status: 'error', message: PUBLISHER_REFUSED_ERROR }, isDisposed: true });
    expect(server.runs.length).toBe(runsBefore);
  });
});

describe("the worker's runs consumer, which may not write replies", () => {
  it('dead-letters a message that asks for a reply without publishing one, and keeps consuming on the same channel', async () => {
    await inspector.purgeQueue(names.runsQueue);
    await inspector.purgeQueue(runsDeadLetters);
    const worker = await startTransport({ url: input.workerUrl, queue: names.runsQueue, replies: false });
    const channelClosures: unknown[] = [];
    worker.transport.on('disconnect', (error) => channelClosures.push(error));
    try {
      // Unknown pattern with a replyTo: answered with an error by a transport that replies, which here would be refused
      // (403), close the channel, requeue the message and loop.
      inspector.sendToQueue(names.runsQueue, Buffer.from('{"pattern":"no.such","data":{}}'), { replyTo: `replies-${suffix}`, correlationId: 'asks-for-a-reply' });
      inspector.sendToQueue(names.runsQueue, Buffer.from('{"pattern":"run.event","data":{"after":true}}'));
      await inspector.waitForConfirms();

      await waitUntil(async () => (await readyCount(runsDeadLetters)) === 1 && worker.runs.length === 1);
      expect((await drain(runsDeadLetters)).map((message) => message.properties.correlationId)).toEqual(['asks-for-a-reply']);
      expect(worker.runs).toEqual([{ after: true }]);
      expect(await readyCount(names.runsQueue)).toBe(0);
      expect(channelClosures).toEqual([]);
    } finally {
      await worker.transport.close();
    }
  });
});

describe('the broker setup', () => {
  it('gives each runtime user exactly the permissions computed from the queue names', async () => {
    const expected = brokerPermissions(names);

    expect(await permissionsOf(vhost, serverUser.name)).toEqual(expected.server);
    expect(await permissionsOf(vhost, workerUser.name)).toEqual(expected.worker);
  });

  it('is idempotent: run again, it keeps queued messages and resets a changed password and widened permissions', async () => {
    await inspector.purgeQueue(names.toolsQueue);
    inspector.publish(names.toolsExchange, names.toolsQueue, Buffer.from('{}'));
    await inspector.waitForConfirms();
    await rabbitmqctl('set_permissions', '-p', vhost, workerUser.name, '.*', '.*', '.*');
    await rabbitmqctl('change_password', workerUser.name, 'changed-by-someone');

    await setupBroker(input, { kind: 'rabbitmqctl' });

    expect(await permissionsOf(vhost, workerUser.name)).toEqual(brokerPermissions(names).worker);
    const worker = await open(input.workerUrl);
    expect(worker).toBeDefined();
    expect(await readyCount(names.toolsQueue)).toBe(1);
    await inspector.purgeQueue(names.toolsQueue);
  }, 60_000);
});
