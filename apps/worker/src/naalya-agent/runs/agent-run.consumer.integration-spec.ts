import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { AGENT_RUN_PATTERN, agentRunEventSchema, type AgentRunEvent, type AgentRunRequest } from '@naalya/agent-tools';
import { AckAfterReplyTransport, declareTopology, deleteTopology, rmqNames, runsDeadLetterQueue } from '@naalya/rmq';
import { MemorySaver } from '@langchain/langgraph';
import type { INestMicroservice } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { connect, type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedChatModel } from '../core/model/scripted-chat-model.js';
import { scriptedPolicy } from '../core/model/scripted-policy.js';
import { schoolContext } from '../core/tools/tool-context.fixture.js';
import { FakeRunLeases, TEST_DISPATCH_TOKEN } from '../testing/fake-run-leases.fixture.js';
import { FakeToolCaller } from '../testing/fake-tool-caller.fixture.js';
import { AgentRunConsumer } from './agent-run.consumer.js';
import { AgentRunExecutor } from './agent-run.executor.js';
import { RunEventPublisher } from './run-event.publisher.js';

const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-test-${suffix}`, `agent-runs-test-${suffix}`);
const eventsQueue = `${names.runEventsExchange}.test-${suffix}`;

// AMQP reports only a queue's ready count; whether the delivered message is still unacknowledged needs the broker's view.
// The runs queue is a quorum queue, whose counts rabbitmqctl reports a few seconds late: wait for them, never read once.
const unackedCount = async (queue: string): Promise<number> => {
  const { stdout } = await promisify(execFile)('rabbitmqctl', ['list_queues', '-s', 'name', 'messages_unacknowledged']);
  const row = stdout.split('\n').map((line) => line.split('\t')).find(([name]) => name === queue);
  return Number(row?.[1] ?? Number.NaN);
};

const waitFor = async (check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

/** A caller whose list.staff answers only when the test opens the gate, so the step can be caught mid-flight. */
class GatedToolCaller extends FakeToolCaller {
  private open!: () => void;
  private gate = Promise.resolve();

  close(): void {
    this.gate = new Promise((resolve) => {
      this.open = resolve;
    });
  }

  release(): void {
    this.open();
  }

  override async call(...args: Parameters<FakeToolCaller['call']>) {
    await this.gate;
    return super.call(...args);
  }
}

let connection: ChannelModel;
let channel: Channel;
let app: INestMicroservice;
let publisher: RunEventPublisher;
const caller = new GatedToolCaller().answer('list.staff', { data: [{ id: 's1', fullName: 'Ada Nakato' }], scopeContext: 'You can see the whole school.' });
const received: Array<{ event: AgentRunEvent; message: ConsumeMessage }> = [];

const requestFor = (message: string): AgentRunRequest => ({
  kind: 'start',
  context: { ...schoolContext(), run: { runId: randomUUID(), threadId: randomUUID() }, dispatchToken: TEST_DISPATCH_TOKEN },
  message,
});

const publishRequest = (body: unknown) =>
  channel.sendToQueue(names.runsQueue, Buffer.from(JSON.stringify(body)), { persistent: true, contentType: 'application/json' });

const eventsOf = (runId: string) => received.filter(({ event }) => event.runId === runId);

beforeAll(async () => {
  await declareTopology(RABBITMQ_URL, names);
  connection = await connect(RABBITMQ_URL);
  channel = await connection.createChannel();
  await channel.assertQueue(eventsQueue, { durable: false, autoDelete: true });
  await channel.bindQueue(eventsQueue, names.runEventsExchange, '#');
  await channel.consume(
    eventsQueue,
    (message) => {
      if (!message) return;
      received.push({ event: JSON.parse(message.content.toString()) as AgentRunEvent, message });
      channel.ack(message);
    },
    { noAck: false },
  );

  publisher = new RunEventPublisher({ rabbitmqUrl: RABBITMQ_URL, exchange: names.runEventsExchange });
  await publisher.onModuleInit();
  const executor = new AgentRunExecutor({
    toolCaller: caller,
    checkpointer: new MemorySaver(),
    events: publisher,
    leases: new FakeRunLeases(),
    chatModel: () => new ScriptedChatModel(scriptedPolicy),
  });
  const moduleRef = await Test.createTestingModule({
    controllers: [AgentRunConsumer],
    providers: [{ provide: AgentRunExecutor, useValue: executor }],
  }).compile();
  app = moduleRef.createNestMicroservice({
    strategy: new AckAfterReplyTransport({
      url: RABBITMQ_URL,
      queue: names.runsQueue,
      prefetch: 2,
      deadLetterExchange: names.deadLetterExchange,
      handlerTimeoutMs: 15_000,
      drainTimeoutMs: 2_000,
    }),
    logger: false,
  });
  await app.listen();
});

afterAll(async () => {
  await app?.close();
  await publisher?.onModuleDestroy();
  await connection?.close();
  await deleteTopology(RABBITMQ_URL, names);
});

describe('the runs queue consumer over real RabbitMQ', () => {
  it('runs a step from the queue and publishes its events in order, routed by run id; the message is acked only after the step finished', async () => {
    const request = requestFor('show the staff');
    const { runId } = request.context.run;
    caller.close();
    publishRequest({ pattern: AGENT_RUN_PATTERN, data: request });

    await waitFor(() => caller.calls.length === 0 && eventsOf(runId).some(({ event }) => event.type === 'TOOL_CALL_START'));
    // Mid-step: the tool call is held, so the run message is delivered but not yet acknowledged.
    await waitFor(async () => (await unackedCount(names.runsQueue)) === 1, 15_000);
    expect(await unackedCount(names.runsQueue)).toBe(1);
    expect(eventsOf(runId).map(({ event }) => event.type)).toEqual(['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_END']);

    caller.release();
    await waitFor(() => eventsOf(runId).some(({ event }) => event.type === 'RUN_FINISHED'));
    await waitFor(async () => (await unackedCount(names.runsQueue)) === 0, 15_000);

    const events = eventsOf(runId);
    expect(events.map(({ event }) => event.type)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    for (const { event, message } of events) {
      expect(agentRunEventSchema.safeParse(event).success).toBe(true);
      expect(message.fields.routingKey).toBe(runId);
      expect(message.properties).toMatchObject({ deliveryMode: 2, contentType: 'application/json', type: event.type, userId: 'guest' });
      expect(message.properties.messageId).toEqual(expect.any(String));
      expect(message.properties.headers).toMatchObject({ 'x-dispatch-token': TEST_DISPATCH_TOKEN });
    }
    expect(new Set(events.map(({ message }) => message.properties.messageId)).size).toBe(events.length);
    expect(events[1]?.event).toMatchObject({ toolCallName: 'list_staff', event: 'list.staff' });
    expect(events[5]?.event).toMatchObject({ delta: expect.stringContaining('[scripted model] I found 1 staff: Ada Nakato.') });
    expect(await unackedCount(names.runsQueue)).toBe(0);
    expect((await channel.checkQueue(names.runsQueue)).messageCount).toBe(0);
  }, 45_000);

  it('dead-letters a malformed request (into the runs dead-letter queue, which the server reads) and publishes nothing for it', async () => {
    const deadLetters = runsDeadLetterQueue(names);
    const before = (await channel.checkQueue(deadLetters)).messageCount;
    const threadId = randomUUID();
    publishRequest({ pattern: AGENT_RUN_PATTERN, data: { kind: 'start', context: { run: { runId: 'bad-run', threadId } }, message: 'hi' } });

    await waitFor(async () => (await channel.checkQueue(deadLetters)).messageCount > before);

    expect((await channel.checkQueue(deadLetters)).messageCount).toBe(before + 1);
    expect(received.filter(({ event }) => event.threadId === threadId || event.runId === 'bad-run')).toEqual([]);
    await waitFor(async () => (await unackedCount(names.runsQueue)) === 0, 15_000);
    expect(await unackedCount(names.runsQueue)).toBe(0);
  });
});
