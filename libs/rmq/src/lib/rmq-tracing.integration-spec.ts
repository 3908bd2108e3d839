import { randomUUID } from 'node:crypto';
import { connect, type ChannelModel } from 'amqplib';
import { SpanKind, context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { currentTraceId, inSpan, setTracingEnabled } from '@naalya/telemetry';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { rmqTestUrl } from '../test/rmq-test-broker.js';
import { AckAfterReplyTransport } from './ack-after-reply.transport.js';
import { ConfirmPublisher } from './confirm-publisher.js';
import { currentRmqMessage } from './current-rmq-message.js';
import { MESSAGE_SIGNATURE_HEADER } from './message-signature.js';
import { DIRECT_REPLY_TO, rmqNames } from './rmq-names.js';
import { RmqRpcClient } from './rmq-rpc-client.js';
import { declareTopology, deleteTopology } from './rmq-topology.js';

// The AMQP hop's spans and W3C trace context, through a real RabbitMQ, with an in-memory exporter in this process.
const url = rmqTestUrl();
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-test-trace-${suffix}`, `agent-runs-test-trace-${suffix}`);
const SILENT = { log: () => undefined, warn: () => undefined, error: () => undefined };

const exporter = new InMemorySpanExporter();
let admin: ChannelModel;
let transport: AckAfterReplyTransport;
let client: RmqRpcClient;
/** What the handler saw of each call: the trace it ran in and the body bytes it was given. */
const seen: { traceId: string | undefined; body: string; headers: Record<string, unknown> }[] = [];

beforeAll(async () => {
  new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register();
  setTracingEnabled(true);
  await declareTopology(url, names);
  admin = await connect(url);
  transport = new AckAfterReplyTransport({
    url,
    queue: names.toolsQueue,
    prefetch: 2,
    deadLetterExchange: names.deadLetterExchange,
    handlerTimeoutMs: 5_000,
    drainTimeoutMs: 1_000,
    logger: SILENT,
    connectionName: `rmq-test-trace-server-${suffix}`,
  });
  transport.addHandler('echo', async (data: unknown) => {
    const frame = currentRmqMessage();
    seen.push({ traceId: currentTraceId(), body: frame?.content.toString('utf8') ?? '', headers: (frame?.properties.headers ?? {}) as Record<string, unknown> });
    return data;
  });
  await new Promise<void>((resolve, reject) => transport.listen((error?: unknown) => (error ? reject(error) : resolve())));
  client = new RmqRpcClient({ url, exchange: names.toolsExchange, routingKey: names.toolsQueue, connectionName: `rmq-test-trace-client-${suffix}` });
  await client.connect(5_000);
});

afterEach(() => {
  exporter.reset();
  seen.length = 0;
});

afterAll(async () => {
  setTracingEnabled(false);
  trace.disable();
  context.disable();
  propagation.disable();
  await client?.close();
  await transport?.close();
  await admin?.close().catch(() => undefined);
  await deleteTopology(url, names);
});

describe('tracing the AMQP hop', () => {
  it('a call: PRODUCER span at the client, CONSUMER span at the server as its child, traceparent beside the body and never in it', async () => {
    const callerTrace = await inSpan('caller', {}, async () => {
      expect(await client.call('echo', { n: 1 }, 5_000)).toEqual({ n: 1 });
      return currentTraceId();
    });
    // The consumer span ends when the message is settled, just after the reply the client already has.
    await expect.poll(() => exporter.getFinishedSpans().length).toBe(3);
    const spans = exporter.getFinishedSpans();
    const producer = spans.find((span) => span.kind === SpanKind.PRODUCER);
    const consumer = spans.find((span) => span.kind === SpanKind.CONSUMER);
    expect(producer).toMatchObject({ name: `publish ${names.toolsExchange}`, attributes: { 'messaging.system': 'rabbitmq', 'messaging.destination.name': names.toolsExchange } });
    expect(consumer).toMatchObject({ name: `process ${names.toolsQueue}`, attributes: { 'messaging.operation.type': 'process', 'naalya.rmq.pattern': 'echo' } });
    expect(consumer?.parentSpanContext?.spanId).toBe(producer?.spanContext().spanId);
    // The handler ran inside the consumer span, in the caller's trace.
    expect(seen).toHaveLength(1);
    expect(seen[0]?.traceId).toBe(callerTrace);
    expect(consumer?.spanContext().traceId).toBe(callerTrace);
    expect(seen[0]?.headers['traceparent']).toBe(`00-${callerTrace}-${producer?.spanContext().spanId}-01`);
    expect(seen[0]?.body).toBe(JSON.stringify({ pattern: 'echo', data: { n: 1 }, id: JSON.parse(seen[0]?.body ?? '{}').id }));
    expect(seen[0]?.body).not.toContain('traceparent');
  });

  it('a traceparent forged by a publisher only parents the span: the message is handled exactly as without it', async () => {
    const channel = await admin.createChannel();
    const forged = '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01';
    // Direct reply-to, the only reply address the transport answers: consumed on the channel that publishes.
    await channel.consume(DIRECT_REPLY_TO, () => undefined, { noAck: true });
    channel.sendToQueue(names.toolsQueue, Buffer.from(JSON.stringify({ pattern: 'echo', data: { n: 2 }, id: 'x' })), { replyTo: DIRECT_REPLY_TO, headers: { traceparent: forged } });
    await expect.poll(() => seen.length).toBe(1);
    expect(seen[0]?.traceId).toBe('0123456789abcdef0123456789abcdef');
    await channel.close();
  });

  it('a confirmed publish: its headers keep the signature and gain traceparent; the body is published byte for byte', async () => {
    const queue = `rmq-test-trace-q-${suffix}`;
    const setup = await admin.createChannel();
    await setup.assertQueue(queue, { autoDelete: true });
    const publisher = new ConfirmPublisher({ url, what: 'tracing test', logger: SILENT, recovery: { initialMaxRetries: 0 }, check: (channel) => channel.checkQueue(queue) });
    await publisher.start();
    const body = Buffer.from('{"signed":"exactly these bytes"}');
    try {
      await inSpan('caller', {}, () => publisher.publish('', queue, body, { messageId: 'm-1', headers: { [MESSAGE_SIGNATURE_HEADER]: 'kid.sig' } }));
      const got = await setup.get(queue, { noAck: true });
      const producer = exporter.getFinishedSpans().find((span) => span.kind === SpanKind.PRODUCER);
      expect(producer).toMatchObject({ name: `publish ${queue}`, attributes: { 'messaging.message.id': 'm-1', 'messaging.message.body.size': body.length } });
      expect(got && got.content.equals(body)).toBe(true);
      expect(got && got.properties.headers).toEqual({
        [MESSAGE_SIGNATURE_HEADER]: 'kid.sig',
        traceparent: `00-${producer?.spanContext().traceId}-${producer?.spanContext().spanId}-01`,
      });
    } finally {
      await publisher.close();
      await setup.deleteQueue(queue).catch(() => undefined);
      await setup.close().catch(() => undefined);
    }
  });
});
