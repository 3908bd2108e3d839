import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Controller, Module, type INestMicroservice, type LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ClientRMQ, Ctx, EventPattern, MessagePattern, Payload, RmqContext, RmqRecord, type RmqRecordOptions } from '@nestjs/microservices';
import { connect, type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type GetMessage, type Options } from 'amqplib';
import { firstValueFrom, from, lastValueFrom } from 'rxjs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { closeConnectionByName, queueCounts, rmqTestUrl, waitUntil, type QueueCounts } from '../test/rmq-test-broker.js';
import { AckAfterReplyTransport, PUBLISHER_REFUSED_ERROR, type AckAfterReplyTransportOptions } from './ack-after-reply.transport.js';
import { currentRmqMessage, type RmqMessageFrame } from './current-rmq-message.js';
import { DIRECT_REPLY_TO, rmqNames } from './rmq-names.js';
import { declareTopology, deleteTopology } from './rmq-topology.js';

const url = rmqTestUrl();
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-test-${suffix}`, `agent-runs-test-${suffix}`);
const serverConnectionName = `rmq-test-server-${suffix}`;
const PREFETCH = 4;
/** Long enough for one rabbitmqctl round trip while a handler is held, short enough to keep the run quick. */
// Long enough for rabbitmqctl (a CLI, slow on a loaded machine) to observe a message while its handler is held.
const HANDLER_TIMEOUT_MS = 6_000;
const MAX_MESSAGE_BYTES = 16 * 1024;

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
};

/** What the handlers saw, for the tests to inspect. */
const seen = {
  runs: new Map<string, number>(),
  /** The frames of handlers that never resolve, and whether each read as aborted when its handler started. */
  neverFrames: [] as RmqMessageFrame[],
  neverAbortedAtStart: [] as boolean[],
  events: [] as unknown[],
  gateRedeliveries: [] as boolean[],
  slowStarted: deferred(),
  gate: deferred(),
};
const countRun = (pattern: string) => seen.runs.set(pattern, (seen.runs.get(pattern) ?? 0) + 1);
const runsOf = (pattern: string) => seen.runs.get(pattern) ?? 0;

@Controller()
class ProbeController {
  @MessagePattern('echo.thing')
  async echo(@Payload() data: unknown) {
    countRun('echo.thing');
    // After an await, so the frame is shown to survive the handler's async continuation.
    await sleep(1);
    const frame = currentRmqMessage();
    return {
      data,
      pattern: frame?.pattern,
      userId: frame?.properties.userId,
      expiration: frame?.properties.expiration,
      redelivered: frame?.fields.redelivered,
      body: Buffer.isBuffer(frame?.content) ? JSON.parse(frame.content.toString('utf8')) : 'not a Buffer',
    };
  }

  @MessagePattern('fail.thing')
  fail(): never {
    countRun('fail.thing');
    throw new Error('boom');
  }

  @MessagePattern('error.result')
  errorResult() {
    return { error: 'x' };
  }

  @MessagePattern('last.value')
  lastValue() {
    return from([1, 2, 3]);
  }

  @MessagePattern('never.resolves')
  never() {
    const frame = currentRmqMessage();
    if (frame) {
      // `aborted` only: the signal is not read until the test does, so `aborted` must work without it.
      seen.neverAbortedAtStart.push(frame.aborted);
      seen.neverFrames.push(frame);
    }
    return new Promise(() => undefined);
  }

  @MessagePattern('slow.thing')
  async slow(@Payload() milliseconds: number) {
    seen.slowStarted.resolve();
    await sleep(milliseconds);
    return 'slow done';
  }

  @MessagePattern('bigint.result')
  bigintResult() {
    return { big: 1n };
  }

  @MessagePattern('self.ack')
  selfAck(@Ctx() context: RmqContext) {
    const channel = context.getChannelRef() as Channel;
    channel.ack(context.getMessage() as ConsumeMessage);
    return 'answered';
  }

  @MessagePattern('gate.thing')
  async gated() {
    const redelivered = currentRmqMessage()?.fields.redelivered ?? false;
    seen.gateRedeliveries.push(redelivered);
    if (!redelivered) await seen.gate.promise;
    return { redelivered };
  }

  @EventPattern('note.event')
  note(@Payload() data: unknown) {
    seen.events.push(data);
  }

  @EventPattern('fail.event')
  failEvent(@Payload() _data: unknown): void {
    throw new Error('event boom');
  }
}

@Module({ controllers: [ProbeController] })
class ProbeModule {}

type WireEvent = { operation: 'publish' | 'ack' | 'nack'; correlationId: string | undefined; deliveryTag?: number };

/** Records, in call order, every reply published and every ack/nack on the consuming channel. */
class RecordingTransport extends AckAfterReplyTransport {
  readonly wire: WireEvent[] = [];

  protected override async openChannel(model: ChannelModel): Promise<Channel> {
    const channel = await super.openChannel(model);
    const wire = this.wire;
    return new Proxy(channel, {
      get(target, key, receiver) {
        if (key === 'sendToQueue') {
          return (queue: string, content: Buffer, options?: Options.Publish) => {
            wire.push({ operation: 'publish', correlationId: options?.correlationId });
            return target.sendToQueue(queue, content, options);
          };
        }
        if (key === 'ack' || key === 'nack') {
          return (message: ConsumeMessage, allUpTo?: boolean, requeue?: boolean) => {
            wire.push({ operation: key, correlationId: message.properties.correlationId, deliveryTag: message.fields.deliveryTag });
            if (key === 'ack') target.ack(message, allUpTo);
            else target.nack(message, allUpTo, requeue);
          };
        }
        return Reflect.get(target, key, receiver);
      },
    });
  }
}

class RecordingLogger implements LoggerService {
  readonly lines: string[] = [];
  log(message: unknown) {
    this.lines.push(`log ${String(message)}`);
  }
  error(message: unknown) {
    this.lines.push(`error ${String(message)}`);
  }
  warn(message: unknown) {
    this.lines.push(`warn ${String(message)}`);
  }
}

type Server = { app: INestMicroservice; transport: RecordingTransport; logger: RecordingLogger };

const startServer = async (overrides: Partial<AckAfterReplyTransportOptions> = {}): Promise<Server> => {
  const logger = new RecordingLogger();
  const transport = new RecordingTransport({
    url,
    queue: names.toolsQueue,
    prefetch: PREFETCH,
    deadLetterExchange: names.deadLetterExchange,
    maxMessageBytes: MAX_MESSAGE_BYTES,
    handlerTimeoutMs: HANDLER_TIMEOUT_MS,
    drainTimeoutMs: 5_000,
    logger,
    connectionName: serverConnectionName,
    reconnect: { initialDelayMs: 50, maxDelayMs: 500, startupRetries: 1 },
    ...overrides,
  });
  const app = await NestFactory.createMicroservice(ProbeModule, { strategy: transport, logger: false });
  await app.listen();
  return { app, transport, logger };
};

let inspectorConnection: ChannelModel;
/** A confirm channel, so raw publishes are known to be queued before the next step. */
let inspector: ConfirmChannel;
/** An ordinary queue the tests read, to show that nothing is ever published to one named as replyTo. */
let ordinaryQueue: string;
const rawReplies: ConsumeMessage[] = [];
const ordinaryQueueMessages: ConsumeMessage[] = [];
let client: ClientRMQ;

const call = (pattern: string, data: unknown, options: RmqRecordOptions = {}) =>
  firstValueFrom(client.send<unknown>(pattern, new RmqRecord(data, { expiration: '10000', ...options })));

const publishRaw = (content: Buffer, properties: Options.Publish = {}) =>
  inspector.sendToQueue(names.toolsQueue, content, { replyTo: DIRECT_REPLY_TO, ...properties });

const rawPacket = (packet: Record<string, unknown>) => Buffer.from(JSON.stringify(packet));

const deadLetterCount = async () => (await inspector.checkQueue(names.deadLetterQueue)).messageCount;

const drainDeadLetters = async (): Promise<GetMessage[]> => {
  const messages: GetMessage[] = [];
  for (let message = await inspector.get(names.deadLetterQueue, { noAck: true }); message; message = await inspector.get(names.deadLetterQueue, { noAck: true })) {
    messages.push(message);
  }
  return messages;
};

/** 0 ready and 0 unacked, as the broker counts them (polled: the ack travels just behind the reply). */
const expectSettled = async (queue: string) => {
  let counts: QueueCounts = { ready: -1, unacked: -1 };
  await waitUntil(async () => {
    counts = await queueCounts(queue);
    return counts.ready === 0 && counts.unacked === 0;
  }, 15_000);
  expect(counts).toEqual({ ready: 0, unacked: 0 });
};

const settlementsOf = (wire: WireEvent[], correlationId: string) =>
  wire.filter((event) => event.correlationId === correlationId && event.operation !== 'publish').map((event) => event.operation);

beforeAll(async () => {
  await declareTopology(url, names);
  inspectorConnection = await connect(url, { noDelay: true });
  inspector = await inspectorConnection.createConfirmChannel();
  // Raw calls read their replies by direct reply-to, as a real caller does: the transport answers no other address.
  await inspector.consume(DIRECT_REPLY_TO, (message) => message && rawReplies.push(message), { noAck: true });
  ordinaryQueue = (await inspector.assertQueue('', { exclusive: true, autoDelete: true })).queue;
  await inspector.consume(ordinaryQueue, (message) => message && ordinaryQueueMessages.push(message), { noAck: true });
  // A Nest client as a caller of the transport: it never asserts the queue the topology step declared (other arguments
  // are refused, 406) and reads replies by direct reply-to; noAck stays unset, which the reply consumer needs (nestjs/nest#11966).
  client = new ClientRMQ({
    urls: [url],
    queue: names.toolsQueue,
    noAssert: true,
    replyQueue: DIRECT_REPLY_TO,
    persistent: false,
    socketOptions: { connectionOptions: { noDelay: true } },
  });
  await client.connect();
});

afterAll(async () => {
  await client?.close().catch(() => undefined);
  await inspectorConnection?.close().catch(() => undefined);
  await deleteTopology(url, names);
});

beforeEach(async () => {
  await inspector.purgeQueue(names.deadLetterQueue);
  rawReplies.length = 0;
  ordinaryQueueMessages.length = 0;
});

describe('AckAfterReplyTransport', () => {
  let server: Server;

  beforeAll(async () => {
    server = await startServer();
  });

  afterAll(async () => {
    await server?.app.close();
  });

  it('holds a call unacked while its handler runs, answers it, then acks it: the queue ends with 0 ready and 0 unacked', async () => {
    seen.gateRedeliveries.length = 0;
    seen.gate = deferred();

    const reply = call('gate.thing', null);
    await waitUntil(() => seen.gateRedeliveries.length === 1);
    // Manual acknowledgement: the broker still counts the message as delivered but unacked while the handler runs.
    // rabbitmqctl's counts are refreshed periodically, so wait for them to catch up before asserting.
    let counts: QueueCounts = { ready: -1, unacked: -1 };
    await waitUntil(async () => {
      counts = await queueCounts(names.toolsQueue);
      return counts.unacked === 1;
    }, HANDLER_TIMEOUT_MS - 1_000);
    expect(counts).toEqual({ ready: 0, unacked: 1 });
    seen.gate.resolve();

    expect(await reply).toEqual({ redelivered: false });
    await expectSettled(names.toolsQueue);
    expect(await deadLetterCount()).toBe(0);
  });

  it('runs the handler in a frame that carries the message properties (userId, expiration, redelivered, pattern) and its exact body', async () => {
    const reply = await call('echo.thing', { n: 2 }, { userId: 'guest', expiration: '5000' });

    expect(reply).toEqual({
      data: { n: 2 },
      pattern: 'echo.thing',
      userId: 'guest',
      expiration: '5000',
      redelivered: false,
      body: { pattern: 'echo.thing', data: { n: 2 }, id: expect.any(String) },
    });
    expect(currentRmqMessage()).toBeUndefined();
  });

  it('answers with the last value of an Observable result', async () => {
    expect(await call('last.value', null)).toBe(3);
  });

  it('treats a returned { error } as a normal answer: acked, not dead-lettered', async () => {
    server.transport.wire.length = 0;

    expect(await call('error.result', null)).toEqual({ error: 'x' });

    await expectSettled(names.toolsQueue);
    const correlationId = server.transport.wire[0]?.correlationId ?? '';
    expect(settlementsOf(server.transport.wire, correlationId)).toEqual(['ack']);
    expect(await deadLetterCount()).toBe(0);
  });

  it('dead-letters 10 × prefetch malformed, unknown-pattern, oversized and throwing messages with an error reply each, and still answers a normal call at once', async () => {
    server.transport.wire.length = 0;
    const perKind = (10 * PREFETCH) / 4;
    const kinds: Array<[string, (index: number) => Buffer]> = [
      ['not-json', (index) => Buffer.from(`not json {${index}`)],
      ['unknown-pattern', (index) => rawPacket({ pattern: 'no.such.pattern', data: {}, id: `unknown-${index}` })],
      ['oversized', (index) => rawPacket({ pattern: 'echo.thing', data: 'x'.repeat(MAX_MESSAGE_BYTES), id: `oversized-${index}` })],
      ['throwing', (index) => rawPacket({ pattern: 'fail.thing', data: {}, id: `throwing-${index}` })],
    ];
    const sent: string[] = [];
    for (let index = 0; index < perKind; index += 1) {
      for (const [kind, body] of kinds) {
        const correlationId = `${kind}-${index}`;
        sent.push(correlationId);
        publishRaw(body(index), { correlationId });
      }
    }
    await inspector.waitForConfirms();
    const echoRunsBefore = runsOf('echo.thing');

    const started = Date.now();
    const reply = await call('echo.thing', { after: 'flood' });
    const elapsed = Date.now() - started;

    expect(reply).toMatchObject({ data: { after: 'flood' } });
    expect(elapsed).toBeLessThan(1_000);
    // The oversized calls named echo.thing, and none of them reached it.
    expect(runsOf('echo.thing')).toBe(echoRunsBefore + 1);
    await waitUntil(async () => (await deadLetterCount()) === sent.length && rawReplies.length === sent.length);
    expect(await deadLetterCount()).toBe(sent.length);
    await expectSettled(names.toolsQueue);

    const deadLetters = await drainDeadLetters();
    expect(deadLetters.map((message) => message.properties.correlationId).sort()).toEqual([...sent].sort());
    for (const message of deadLetters) {
      expect(message.properties.headers?.['x-first-death-reason']).toBe('rejected');
      expect(message.properties.headers?.['x-first-death-queue']).toBe(names.toolsQueue);
    }

    expect(rawReplies.map((message) => message.properties.correlationId).sort()).toEqual([...sent].sort());
    for (const message of rawReplies) {
      const body = JSON.parse(message.content.toString()) as Record<string, unknown>;
      // Refused before parsing, a message has no id to echo; ClientRMQ matches replies by correlationId anyway.
      const unparsed = /^(not-json|oversized)-/.test(message.properties.correlationId);
      expect(Object.keys(body).sort()).toEqual(unparsed ? ['err', 'isDisposed'] : ['err', 'id', 'isDisposed']);
      expect(body).toMatchObject({ err: { status: 'error' }, isDisposed: true });
    }

    for (const correlationId of sent) expect(settlementsOf(server.transport.wire, correlationId)).toEqual(['nack']);
  });

  it('dead-letters a body that is not valid UTF-8 with an error reply naming it, and never runs its handler', async () => {
    server.transport.wire.length = 0;
    const deadBefore = await deadLetterCount();
    const repliesBefore = rawReplies.length;
    const echoRunsBefore = runsOf('echo.thing');
    const correlationId = 'not-utf8-1';
    // 0xC3 0x28: a two-byte lead followed by no continuation byte; toString('utf8') would make it U+FFFD and run the call.
    const body = Buffer.concat([Buffer.from('{"pattern":"echo.thing","data":"a'), Buffer.from([0xc3, 0x28]), Buffer.from('","id":"u1"}')]);
    publishRaw(body, { correlationId });
    await inspector.waitForConfirms();
    await waitUntil(async () => (await deadLetterCount()) === deadBefore + 1 && rawReplies.length === repliesBefore + 1);
    expect(runsOf('echo.thing')).toBe(echoRunsBefore);
    const reply = rawReplies.at(-1);
    expect(reply?.properties.correlationId).toBe(correlationId);
    expect(JSON.parse(reply?.content.toString() ?? '{}')).toEqual({ err: { status: 'error', message: 'Message body is not valid UTF-8.' }, isDisposed: true });
    expect(settlementsOf(server.transport.wire, correlationId)).toEqual(['nack']);
    const deadLetters = await drainDeadLetters();
    expect(deadLetters.map((message) => message.properties.correlationId)).toContain(correlationId);
  });

  it('dead-letters a call without replyTo without running its handler', async () => {
    const echoRunsBefore = runsOf('echo.thing');

    publishRaw(rawPacket({ pattern: 'echo.thing', data: {}, id: 'no-reply-to' }), { replyTo: undefined, correlationId: 'no-reply-to' });
    await inspector.waitForConfirms();

    await waitUntil(async () => (await deadLetterCount()) === 1);
    expect(await deadLetterCount()).toBe(1);
    await expectSettled(names.toolsQueue);
    expect(runsOf('echo.thing')).toBe(echoRunsBefore);
    expect(rawReplies).toHaveLength(0);
  });

  it('a tool call\'s reply goes only to a direct reply-to address: a call or a malformed message whose replyTo names an ordinary queue is dead-lettered unrun and nothing is published there', async () => {
    const echoRunsBefore = runsOf('echo.thing');
    const deadBefore = await deadLetterCount();
    const forged = [
      // A well-formed call to a real handler, as a forger who wants the server to publish into a queue of its choosing.
      { content: rawPacket({ pattern: 'echo.thing', data: { into: 'ordinary' }, id: 'ordinary-reply-to' }), correlationId: 'ordinary-reply-to', replyTo: ordinaryQueue },
      // Malformed and unknown-pattern messages are answered with an error at a direct reply-to address; here, not at all.
      { content: Buffer.from('not json'), correlationId: 'ordinary-malformed', replyTo: ordinaryQueue },
      { content: rawPacket({ pattern: 'no.such.pattern', data: {}, id: 'ordinary-unknown' }), correlationId: 'ordinary-unknown', replyTo: ordinaryQueue },
      // The bare pseudo-queue name, or one that merely starts like it, is not an address the broker issued.
      { content: rawPacket({ pattern: 'echo.thing', data: {}, id: 'bare-prefix' }), correlationId: 'bare-prefix', replyTo: `${DIRECT_REPLY_TO}.` },
    ];
    for (const { content, correlationId, replyTo } of forged) publishRaw(content, { correlationId, replyTo });
    await inspector.waitForConfirms();

    await waitUntil(async () => (await deadLetterCount()) === deadBefore + forged.length);
    await expectSettled(names.toolsQueue);
    // A control call, answered after the forged ones were consumed: any reply to them would have arrived by now.
    expect(await call('echo.thing', { control: true })).toMatchObject({ data: { control: true } });
    expect(runsOf('echo.thing')).toBe(echoRunsBefore + 1);
    expect(ordinaryQueueMessages).toHaveLength(0);
    expect(rawReplies).toHaveLength(0);
    expect(server.logger.lines.some((line) => line.includes('security event: call refused (replyTo is not a direct reply-to address)'))).toBe(true);
    const deadLetters = await drainDeadLetters();
    expect(deadLetters.map((message) => message.properties.correlationId).sort()).toEqual(forged.map((message) => message.correlationId).sort());
  });

  it('settles a handler that never resolves after handlerTimeoutMs (error reply, dead-lettered, signal aborted), freeing its prefetch slot', async () => {
    seen.neverFrames.length = 0;
    seen.neverAbortedAtStart.length = 0;
    const started = Date.now();
    // Every prefetch slot is taken by a handler that never returns; the echo call can only run once they are freed.
    const stuck = Array.from({ length: PREFETCH }, () => call('never.resolves', null).catch((error: unknown) => error));
    await waitUntil(() => seen.neverFrames.length === PREFETCH);
    const echo = await call('echo.thing', { after: 'stuck' });
    const echoElapsed = Date.now() - started;
    const errors = await Promise.all(stuck);

    expect(echo).toMatchObject({ data: { after: 'stuck' } });
    expect(echoElapsed).toBeGreaterThanOrEqual(HANDLER_TIMEOUT_MS - 50);
    expect(echoElapsed).toBeLessThan(HANDLER_TIMEOUT_MS + 1_500);
    for (const error of errors) {
      expect(error).toMatchObject({ status: 'error', message: expect.stringContaining(`time limit of ${HANDLER_TIMEOUT_MS} ms`) });
    }
    expect(seen.neverAbortedAtStart).toEqual(Array(PREFETCH).fill(false));
    expect(seen.neverFrames.map((frame) => frame.aborted)).toEqual(Array(PREFETCH).fill(true));
    expect(seen.neverFrames.every((frame) => frame.signal.aborted)).toBe(true);
    await waitUntil(async () => (await deadLetterCount()) === PREFETCH);
    expect(await deadLetterCount()).toBe(PREFETCH);
    await expectSettled(names.toolsQueue);
    expect(server.logger.lines.filter((line) => line.startsWith('warn') && line.includes('exceeded its time limit'))).toHaveLength(PREFETCH);
  });

  it('answers an unserialisable result with an error reply and dead-letters it', async () => {
    await expect(call('bigint.result', null)).rejects.toMatchObject({ status: 'error', message: 'The reply could not be serialised.' });

    await waitUntil(async () => (await deadLetterCount()) === 1);
    expect(await deadLetterCount()).toBe(1);
    await expectSettled(names.toolsQueue);
  });

  it('ignores a handler acking through @Ctx(): the message is acked once, by the transport, and the channel survives', async () => {
    server.transport.wire.length = 0;

    expect(await call('self.ack', null)).toBe('answered');
    const correlationId = server.transport.wire[0]?.correlationId ?? '';
    expect(settlementsOf(server.transport.wire, correlationId)).toEqual(['ack']);
    expect(server.logger.lines.some((line) => line.includes('channel.ack(); ignored'))).toBe(true);
    // A double ack would have closed the channel (406 unknown delivery tag); the next call proves it is open.
    expect(await call('echo.thing', { after: 'self-ack' })).toMatchObject({ data: { after: 'self-ack' } });
    await expectSettled(names.toolsQueue);
  });

  it('runs an @EventPattern handler for a message without replyTo and acks it; a failing one is dead-lettered', async () => {
    seen.events.length = 0;

    await lastValueFrom(client.emit('note.event', new RmqRecord({ note: 1 })), { defaultValue: undefined });
    await waitUntil(() => seen.events.length === 1);
    expect(seen.events).toEqual([{ note: 1 }]);
    await expectSettled(names.toolsQueue);
    expect(await deadLetterCount()).toBe(0);

    await lastValueFrom(client.emit('fail.event', new RmqRecord({ note: 2 })), { defaultValue: undefined });
    await waitUntil(async () => (await deadLetterCount()) === 1);
    expect(await deadLetterCount()).toBe(1);
    await expectSettled(names.toolsQueue);
  });

  it('publishes every reply before acking or nacking its message, and settles each delivery exactly once', async () => {
    server.transport.wire.length = 0;
    const calls = [
      ...Array.from({ length: 30 }, (_, index) => call('echo.thing', { index })),
      ...Array.from({ length: 5 }, () => call('fail.thing', null).catch((error: unknown) => error)),
    ];
    await Promise.all(calls);
    await expectSettled(names.toolsQueue);

    const wire = server.transport.wire;
    const published = wire.filter((event) => event.operation === 'publish').map((event) => event.correlationId ?? '');
    expect(published).toHaveLength(35);
    expect(new Set(published).size).toBe(35);
    for (const correlationId of published) {
      const publishIndex = wire.findIndex((event) => event.operation === 'publish' && event.correlationId === correlationId);
      const settlementIndexes = wire.flatMap((event, index) => (event.operation !== 'publish' && event.correlationId === correlationId ? [index] : []));
      expect(settlementIndexes).toHaveLength(1);
      expect(settlementIndexes[0]).toBeGreaterThan(publishIndex);
    }
    const deliveryTags = wire.filter((event) => event.operation !== 'publish').map((event) => event.deliveryTag);
    expect(new Set(deliveryTags).size).toBe(deliveryTags.length);
    expect(wire.filter((event) => event.operation === 'nack')).toHaveLength(5);
  });
});

describe('AckAfterReplyTransport lifecycle', () => {
  it('drains: a call in flight when close() starts still gets its reply, and nothing new is consumed after', async () => {
    const server = await startServer();
    seen.slowStarted = deferred();
    const echoRunsBefore = runsOf('echo.thing');

    const slow = call('slow.thing', 400);
    await seen.slowStarted.promise;
    const closing = server.app.close();
    // Give the consumer's cancel time to reach the broker before the next message arrives.
    await sleep(50);
    publishRaw(rawPacket({ pattern: 'echo.thing', data: {}, id: 'after-close' }), { correlationId: 'after-close' });
    await inspector.waitForConfirms();

    expect(await slow).toBe('slow done');
    await closing;
    await sleep(100);
    expect(runsOf('echo.thing')).toBe(echoRunsBefore);
    expect(rawReplies).toHaveLength(0);
    expect(await queueCounts(names.toolsQueue)).toEqual({ ready: 1, unacked: 0 });
    const settlements = server.transport.wire.filter((event) => event.operation !== 'publish');
    expect(settlements.map((event) => event.operation)).toEqual(['ack']);
    await inspector.purgeQueue(names.toolsQueue);
  });

  it('stops waiting after drainTimeoutMs: the unfinished message is requeued, not lost, and its signal aborted', async () => {
    const server = await startServer({ drainTimeoutMs: 300, handlerTimeoutMs: 10_000 });
    seen.neverFrames.length = 0;
    seen.neverAbortedAtStart.length = 0;
    publishRaw(rawPacket({ pattern: 'never.resolves', data: null, id: 'stuck-at-close' }), { correlationId: 'stuck-at-close' });
    await inspector.waitForConfirms();
    await waitUntil(() => seen.neverFrames.length === 1);

    const started = Date.now();
    await server.app.close();
    const elapsed = Date.now() - started;

    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(2_000);
    expect(seen.neverAbortedAtStart).toEqual([false]);
    expect(seen.neverFrames[0]?.aborted).toBe(true);
    expect(seen.neverFrames[0]?.signal.aborted).toBe(true);
    expect(await queueCounts(names.toolsQueue)).toEqual({ ready: 1, unacked: 0 });
    expect(server.transport.wire.filter((event) => event.operation !== 'publish')).toEqual([]);
    expect(await deadLetterCount()).toBe(0);
    await inspector.purgeQueue(names.toolsQueue);
  });

  it('recovers after the broker closes its connection mid-call, and the redelivered call is answered', async () => {
    // A time limit longer than closing a connection through rabbitmqctl takes, so the first run is still going.
    const server = await startServer({ handlerTimeoutMs: 10_000 });
    seen.gateRedeliveries.length = 0;
    seen.gate = deferred();

    const reply = call('gate.thing', null).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    await waitUntil(() => seen.gateRedeliveries.length === 1);
    await closeConnectionByName(serverConnectionName);

    expect(await reply).toEqual({ value: { redelivered: true } });
    expect(seen.gateRedeliveries).toEqual([false, true]);
    // The first run finishing late must not crash anything: its channel is gone, its message already redelivered.
    seen.gate.resolve();
    await sleep(50);
    expect(await call('echo.thing', { after: 'reconnect' })).toMatchObject({ data: { after: 'reconnect' } });
    await expectSettled(names.toolsQueue);
    expect(await deadLetterCount()).toBe(0);
    expect(server.logger.lines.some((line) => line.startsWith('warn Disconnected from RabbitMQ'))).toBe(true);
    await server.app.close();
  });

  it('fails listen() on a queue that was not declared, and does not declare it', async () => {
    const missingQueue = `${names.toolsQueue}-missing`;

    await expect(startServer({ queue: missingQueue })).rejects.toThrow(/NOT_FOUND/);

    const probe = await inspectorConnection.createChannel();
    probe.on('error', () => undefined);
    await expect(probe.checkQueue(missingQueue)).rejects.toThrow(/NOT_FOUND/);
  });
});

describe('AckAfterReplyTransport with requireUserId (only the worker broker user may call)', () => {
  const brokerUser = new URL(url).username || 'guest';

  it('runs a call whose broker-validated user_id is the required user', async () => {
    const server = await startServer({ requireUserId: brokerUser });
    try {
      const echoRunsBefore = runsOf('echo.thing');
      expect(await call('echo.thing', { ok: 1 }, { userId: brokerUser })).toMatchObject({ data: { ok: 1 }, userId: brokerUser });
      expect(runsOf('echo.thing')).toBe(echoRunsBefore + 1);
      expect(server.logger.lines.filter((line) => line.includes('security event'))).toEqual([]);
    } finally {
      await server.app.close();
    }
  });

  it('refuses a call from another broker user, or with no user_id: error reply, dead-lettered, a security event logged, the handler never run', async () => {
    const server = await startServer({ requireUserId: 'naalya_worker_only' });
    try {
      const echoRunsBefore = runsOf('echo.thing');
      await expect(call('echo.thing', { forged: 1 }, { userId: brokerUser })).rejects.toMatchObject({ message: PUBLISHER_REFUSED_ERROR });
      publishRaw(rawPacket({ pattern: 'echo.thing', data: { forged: 2 }, id: 'no-user-id' }), { correlationId: 'no-user-id' });
      await inspector.waitForConfirms();
      await waitUntil(async () => (await deadLetterCount()) === 2);
      expect(await deadLetterCount()).toBe(2);
      await expectSettled(names.toolsQueue);
      expect(runsOf('echo.thing')).toBe(echoRunsBefore);
      const security = server.logger.lines.filter((line) => line.includes('security event'));
      expect(security).toEqual([
        expect.stringContaining(`user_id "${brokerUser}"`),
        expect.stringContaining('no user_id'),
      ]);
      expect(rawReplies.map((reply) => JSON.parse(reply.content.toString()))).toEqual([
        { id: 'no-user-id', err: { status: 'error', message: PUBLISHER_REFUSED_ERROR }, isDisposed: true },
      ]);
    } finally {
      await server.app.close();
    }
  });

  it('the broker itself refuses a publisher claiming another user id (406), so user_id cannot be forged', async () => {
    const probe = await inspectorConnection.createChannel();
    const closed = new Promise<Error>((resolve) => probe.once('error', resolve));
    probe.sendToQueue(names.toolsQueue, rawPacket({ pattern: 'echo.thing', data: {}, id: 'spoofed' }), { userId: 'naalya_worker_only' });
    expect((await closed).message).toMatch(/PRECONDITION_FAILED/);
  });
});
