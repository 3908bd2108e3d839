import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { runEventBatchSchema, type AgentRunEvent, type RunEventBatch } from '@naalya/agent-tools';
import { declareTopology, deleteTopology, rmqNames } from '@naalya/rmq';
import { connect, type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunEventBuffer, RunEventPublishError, type RunEventMeta, type RunEventSink } from './run-event.buffer.js';
import { RunEventPublisher } from './run-event.publisher.js';

// The real broker: the worker's publisher on this file's own exchange, and a queue bound to it playing the ingest.
const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-buffer-${suffix}`, `agent-runs-buffer-${suffix}`);
const ingestQueue = `${names.runEventsExchange}.buffer-${suffix}`;
const meta: RunEventMeta = { dispatchToken: 'token-1' };

let connection: ChannelModel;
let channel: Channel;
let publisher: RunEventPublisher;
const received: Array<{ batch: RunEventBatch; message: ConsumeMessage }> = [];

const text = (runId: string, index: number): AgentRunEvent => ({
  type: 'TEXT_MESSAGE_CONTENT',
  runId,
  threadId: 'thread-1',
  messageId: 'm-1',
  delta: ` word${index}`,
  timestamp: Date.now(),
});
const batchesOf = (runId: string) => received.filter(({ batch }) => batch.events[0]?.runId === runId);
const eventsOf = (runId: string) => batchesOf(runId).flatMap(({ batch }) => batch.events);

const waitFor = async (check: () => boolean, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the condition');
    await sleep(10);
  }
};

/** The real publisher, each publish counted and (when asked) held back: a slow broker. */
class MeasuredSink implements RunEventSink {
  inFlight = 0;
  maxInFlight = 0;
  published = 0;
  readonly calls: Array<{ at: number; batch: RunEventBatch }> = [];
  constructor(private readonly delayMs = 0) {}
  async publish(batch: RunEventBatch, publishMeta: RunEventMeta): Promise<void> {
    this.calls.push({ at: Date.now(), batch });
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.delayMs > 0) await sleep(this.delayMs);
      await publisher.publish(batch, publishMeta);
      this.published += batch.events.length;
    } finally {
      this.inFlight -= 1;
    }
  }
}

beforeAll(async () => {
  connection = await connect(RABBITMQ_URL);
  channel = await connection.createChannel();
  await declareTopology(RABBITMQ_URL, names);
  await channel.assertQueue(ingestQueue, { durable: false, autoDelete: true });
  await channel.bindQueue(ingestQueue, names.runEventsExchange, '#');
  await channel.consume(ingestQueue, (message) => {
    if (!message) return;
    received.push({ batch: runEventBatchSchema.parse(JSON.parse(message.content.toString())), message });
    channel.ack(message);
  });
  publisher = new RunEventPublisher({ rabbitmqUrl: RABBITMQ_URL, exchange: names.runEventsExchange });
  await publisher.onModuleInit();
});

afterAll(async () => {
  await publisher?.onModuleDestroy();
  await channel?.deleteQueue(ingestQueue).catch(() => undefined);
  await deleteTopology(RABBITMQ_URL, names).catch(() => undefined);
  await connection?.close();
});

describe('RunEventBuffer on the real broker', () => {
  it('sends an event pushed while idle at once, alone, and keeps every event in order across the batches that form under load', async () => {
    const runId = `run-order-${suffix}`;
    const sink = new MeasuredSink(20);
    const buffer = new RunEventBuffer({ sink, meta, runId, mayPublish: () => true });
    await buffer.push(text(runId, 0));
    // Idle: the first event is already on its way, without waiting for a second.
    expect(sink.inFlight).toBe(1);
    for (let index = 1; index < 1_200; index += 1) await buffer.push(text(runId, index));
    await buffer.flush();

    await waitFor(() => eventsOf(runId).length === 1_200);
    expect(eventsOf(runId).map((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? event.delta : ''))).toEqual(
      Array.from({ length: 1_200 }, (_, index) => ` word${index}`),
    );
    const sizes = batchesOf(runId).map(({ batch }) => batch.events.length);
    expect(sizes[0]).toBe(1);
    // Events pushed during the first publish went together, within the contract's bound.
    expect(sizes.length).toBeLessThan(10);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(500);
    expect(sink.maxInFlight).toBe(1);
    // Each batch is its own message, routed by run id, with the step's token.
    const messages = batchesOf(runId).map(({ message }) => message);
    expect(new Set(messages.map((message) => message.properties.messageId)).size).toBe(messages.length);
    expect(messages.every((message) => message.fields.routingKey === runId && message.properties.headers?.['x-dispatch-token'] === 'token-1')).toBe(true);
  });

  it('with a linger, tokens paced like a model\'s share messages, none waits longer than the linger, and a flush does not wait for it', async () => {
    const runId = `run-linger-${suffix}`;
    const sink = new MeasuredSink();
    const buffer = new RunEventBuffer({ sink, meta, runId, mayPublish: () => true, lingerMs: 40 });
    const pushedAt: number[] = [];
    for (let index = 0; index < 20; index += 1) {
      pushedAt.push(Date.now());
      await buffer.push(text(runId, index));
      await sleep(10);
    }
    const flushing = Date.now();
    await buffer.push(text(runId, 20));
    await buffer.flush();
    const flushMs = Date.now() - flushing;

    await waitFor(() => eventsOf(runId).length === 21);
    const sizes = batchesOf(runId).map(({ batch }) => batch.events.length);
    // 20 tokens over ~200 ms with a 40 ms linger: a handful of messages, not 20.
    expect(sizes.length).toBeLessThanOrEqual(10);
    expect(sizes.length).toBeGreaterThan(2);
    expect(eventsOf(runId).map((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? event.delta : ''))).toEqual(
      Array.from({ length: 21 }, (_, index) => ` word${index}`),
    );
    // Each batch left no later than the linger after its first event was pushed (with room for a loaded machine's timers).
    for (const { at, batch } of sink.calls) {
      const first = batch.events[0];
      const index = first?.type === 'TEXT_MESSAGE_CONTENT' ? Number(first.delta.slice(' word'.length)) : -1;
      if (index < 20) expect(at - (pushedAt[index] ?? 0)).toBeLessThanOrEqual(40 + 60);
    }
    expect(flushMs).toBeLessThan(40);
  });

  it('bounds a batch by bytes too, so a message stays far below the ingest limit', async () => {
    const runId = `run-bytes-${suffix}`;
    const buffer = new RunEventBuffer({ sink: new MeasuredSink(20), meta, runId, mayPublish: () => true, maxBatchBytes: 8 * 1024 });
    const big = (index: number): AgentRunEvent => ({ type: 'TEXT_MESSAGE_CONTENT', runId, threadId: 'thread-1', messageId: 'm-1', delta: `${index}`.padEnd(1_000, 'x') });
    for (let index = 0; index < 40; index += 1) await buffer.push(big(index));
    await buffer.flush();

    await waitFor(() => eventsOf(runId).length === 40);
    expect(batchesOf(runId).every(({ message }) => message.content.length < 9 * 1024)).toBe(true);
  });

  it('makes the producer wait once too much is queued behind a slow broker (backpressure), and never queues past the bound', async () => {
    const runId = `run-bound-${suffix}`;
    const sink = new MeasuredSink(150);
    const buffer = new RunEventBuffer({ sink, meta, runId, mayPublish: () => true, maxBatchEvents: 10, maxPendingEvents: 20 });
    let pushed = 0;
    const producer = (async () => {
      for (let index = 0; index < 60; index += 1) {
        await buffer.push(text(runId, index));
        pushed += 1;
        // Pushed but not yet confirmed: never more than the bound, the batch in flight and the one being pushed.
        expect(pushed - sink.published).toBeLessThanOrEqual(20 + 10 + 1);
      }
    })();
    await sleep(100);
    // The first publish is still held: the producer is stopped at the bound, not racing ahead.
    expect(pushed).toBeLessThanOrEqual(21);
    await producer;
    await buffer.flush();
    await waitFor(() => eventsOf(runId).length === 60);
  });

  it('fails the step when a publish fails: the push after it and the flush throw RunEventPublishError, and nothing after it is sent', async () => {
    const runId = `run-fail-${suffix}`;
    let calls = 0;
    const failing: RunEventSink = {
      publish: async (batch, publishMeta) => {
        calls += 1;
        if (calls === 2) throw new Error('channel closed');
        await publisher.publish(batch, publishMeta);
      },
    };
    const buffer = new RunEventBuffer({ sink: failing, meta, runId, mayPublish: () => true });
    await buffer.push(text(runId, 0));
    await buffer.flush();
    await buffer.push(text(runId, 1));
    await expect(buffer.flush()).rejects.toBeInstanceOf(RunEventPublishError);
    await expect(buffer.push(text(runId, 2))).rejects.toBeInstanceOf(RunEventPublishError);
    await sleep(100);
    expect(eventsOf(runId).map((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? event.delta : ''))).toEqual([' word0']);
    expect(calls).toBe(2);
  });

  it('publishes nothing once the step has lost its lease: what waits is dropped and the flush ends', async () => {
    const runId = `run-lease-${suffix}`;
    let held = true;
    const sink = new MeasuredSink(50);
    const buffer = new RunEventBuffer({ sink, meta, runId, mayPublish: () => held });
    await buffer.push(text(runId, 0));
    for (let index = 1; index < 10; index += 1) await buffer.push(text(runId, index));
    held = false;
    await buffer.flush();
    await sleep(100);
    // Only the batch already in flight when the lease went.
    expect(eventsOf(runId)).toHaveLength(1);
  });
});
