import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import {
  AGENT_RUN_LEASE_PATTERN,
  AGENT_RUN_PATTERN,
  DISPATCH_TOKEN_HEADER,
  agentRunLeaseRequestSchema,
  runEventBatchSchema,
  type AgentRunEvent,
  type AgentRunLeaseReply,
  type AgentRunLeaseRequest,
  type AgentRunRequest,
} from '@naalya/agent-tools';
import {
  MESSAGE_SIGNATURE_HEADER,
  brokerCredentialsOf,
  declareTopology,
  deleteTopology,
  generateMessageSigningKeyPair,
  parseMessageSigningKey,
  parseMessageVerifyingKeys,
  rmqNames,
  signMessage,
} from '@naalya/rmq';
import { MemorySaver } from '@langchain/langgraph';
import type { INestMicroservice } from '@nestjs/common';
import { connect, type Channel, type ChannelModel, type ConsumeMessage, type MessageProperties } from 'amqplib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ScriptedChatModel } from '../core/model/scripted-chat-model.js';
import { scriptedPolicy } from '../core/model/scripted-policy.js';
import { AgentToolService } from '../core/tools/agent-tool.service.js';
import { schoolContext } from '../core/tools/tool-context.fixture.js';
import { FakeToolCaller } from '../testing/fake-tool-caller.fixture.js';
import { startRunsConsumer } from '../testing/runs-consumer.fixture.js';
import { AgentRunExecutor } from './agent-run.executor.js';
import { RunEventPublisher } from './run-event.publisher.js';
import { RunLeaseClient } from './run-lease.client.js';
import { RunStepAuthenticity } from './run-step-authenticity.js';
import { FakeRunUsage } from '../testing/fake-run-usage.fixture.js';

// The worker's side of the run lease over real RabbitMQ: the lease RPC rides the worker's tools client onto the tools
// queue, where a raw amqplib responder stands in for the server's @MessagePattern('agent.run.lease') handler.

const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-lease-${suffix}`, `agent-runs-lease-${suffix}`);
const eventsQueue = `${names.runEventsExchange}.test-${suffix}`;
const TOOL_TIMEOUT_MS = 800;
// Steps are published as the server publishes them: as its broker user (here the test's), signed by its run signing key.
const RUN_SIGNING = generateMessageSigningKeyPair('lease-test');
const SERVER_BROKER_USER = brokerCredentialsOf(RABBITMQ_URL).user;

const unackedCount = async (queue: string): Promise<number> => {
  const { stdout } = await promisify(execFile)('rabbitmqctl', ['list_queues', '-s', 'name', 'messages_unacknowledged']);
  const row = stdout.split('\n').map((line) => line.split('\t')).find(([name]) => name === queue);
  return Number(row?.[1] ?? Number.NaN);
};

/** What the executor warned about, and when: a dropped step says so. */
const warnings: { at: number; message: string }[] = [];

const waitFor = async (check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('condition not met in time');
};

/** A caller whose calls answer only when the test opens the gate, so a step can be caught mid-flight. */
class GatedToolCaller extends FakeToolCaller {
  private open: () => void = () => undefined;
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
    const result = await super.call(...args);
    await this.gate;
    return result;
  }
}

type LeaseCall = { request: AgentRunLeaseRequest; properties: MessageProperties; pattern: string };
/** How the stand-in server answers one lease request; `undefined` answers nothing. */
type LeasePolicy = (request: AgentRunLeaseRequest) => AgentRunLeaseReply | undefined;

const GRANT = (leaseMs: number): LeasePolicy => () => ({ granted: true, leaseMs });

let connection: ChannelModel;
let channel: Channel;
let app: INestMicroservice;
let publisher: RunEventPublisher;
let tools: AgentToolService;
let leases: RunLeaseClient;
let policy: LeasePolicy = GRANT(30_000);
const leaseCalls: LeaseCall[] = [];
const caller = new GatedToolCaller().answer('list.staff', { data: [{ id: 's1', fullName: 'Ada Nakato' }], scopeContext: 'You can see the whole school.' });
const received: Array<{ event: AgentRunEvent; message: ConsumeMessage }> = [];

const requestFor = (message: string): AgentRunRequest => ({
  kind: 'start',
  context: { ...schoolContext(), run: { runId: randomUUID(), threadId: randomUUID() }, dispatchToken: `token-${randomUUID()}` },
  message,
});

const publishRequest = (request: AgentRunRequest) => {
  const body = Buffer.from(JSON.stringify({ pattern: AGENT_RUN_PATTERN, data: request }));
  return channel.sendToQueue(names.runsQueue, body, {
    persistent: true,
    contentType: 'application/json',
    userId: SERVER_BROKER_USER,
    headers: { [MESSAGE_SIGNATURE_HEADER]: signMessage(body, parseMessageSigningKey(RUN_SIGNING.privateKey)) },
  });
};

const eventsOf = (runId: string) => received.filter(({ event }) => event.runId === runId);
const leaseCallsOf = (request: AgentRunRequest) => leaseCalls.filter((call) => call.request.dispatchToken === request.context.dispatchToken);
const actionsOf = (request: AgentRunRequest) => leaseCallsOf(request).map((call) => call.request.action);

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
      for (const event of runEventBatchSchema.parse(JSON.parse(message.content.toString())).events) received.push({ event, message });
      channel.ack(message);
    },
    { noAck: false },
  );
  // The stand-in server: answers lease requests the way Nest's RPC transport does, { id, response, isDisposed }.
  await channel.consume(
    names.toolsQueue,
    (message) => {
      if (!message) return;
      const packet = JSON.parse(message.content.toString()) as { pattern: string; data: unknown; id: string };
      const request = agentRunLeaseRequestSchema.parse(packet.data);
      leaseCalls.push({ request, properties: message.properties, pattern: packet.pattern });
      const reply = policy(request);
      if (reply === undefined) return;
      channel.sendToQueue(message.properties.replyTo, Buffer.from(JSON.stringify({ id: packet.id, response: reply, isDisposed: true })), {
        correlationId: message.properties.correlationId,
      });
    },
    { noAck: true },
  );

  publisher = new RunEventPublisher({ rabbitmqUrl: RABBITMQ_URL, exchange: names.runEventsExchange });
  await publisher.onModuleInit();
  tools = new AgentToolService({ rabbitmqUrl: RABBITMQ_URL, toolsQueue: names.toolsQueue, timeoutMs: TOOL_TIMEOUT_MS });
  await tools.onModuleInit();
  leases = new RunLeaseClient(tools, { model: 'scripted', selfHosted: true });
  const executor = new AgentRunExecutor({
    toolCaller: caller,
    checkpointer: new MemorySaver(),
    events: publisher,
    leases,
    usage: new FakeRunUsage(),
    chatModel: () => new ScriptedChatModel(scriptedPolicy),
    logger: { log: () => undefined, warn: (message: unknown) => void warnings.push({ at: Date.now(), message: String(message) }), error: () => undefined },
  });
  app = await startRunsConsumer({
    url: RABBITMQ_URL,
    names,
    executor,
    authenticity: new RunStepAuthenticity({ serverBrokerUser: SERVER_BROKER_USER, publicKeys: parseMessageVerifyingKeys(RUN_SIGNING.publicKey) }),
  });
});

afterAll(async () => {
  await app?.close();
  await tools?.onModuleDestroy();
  await publisher?.onModuleDestroy();
  await connection?.close();
  await deleteTopology(RABBITMQ_URL, names);
});

beforeEach(() => {
  policy = GRANT(30_000);
});

describe('run leases over real RabbitMQ (a stand-in lease server on the tools queue)', () => {
  it('a granted step: claimed through the tools exchange as the worker, its events carry the dispatch token, its lease released at the end', async () => {
    const request = requestFor('show the staff');
    const { runId } = request.context.run;
    publishRequest(request);

    await waitFor(() => eventsOf(runId).some(({ event }) => event.type === 'RUN_FINISHED'));
    await waitFor(() => actionsOf(request).includes('release'));
    await waitFor(async () => (await unackedCount(names.runsQueue)) === 0);

    expect(actionsOf(request)).toEqual(['claim', 'release']);
    const [claim] = leaseCallsOf(request);
    expect(claim?.pattern).toBe(AGENT_RUN_LEASE_PATTERN);
    // The claim names the model the run's data would go to (the server holds it against the school's data choice).
    expect(claim?.request).toEqual({ action: 'claim', workerId: leases.workerId, dispatchToken: request.context.dispatchToken, model: { model: 'scripted', selfHosted: true } });
    expect(claim?.request.workerId).toMatch(/^.+:\d+:[0-9a-f]{12}$/);
    expect(claim?.properties).toMatchObject({ userId: 'guest', replyTo: expect.stringMatching(/^amq\.rabbitmq\.reply-to/) });
    const events = eventsOf(runId);
    expect(events.map(({ event }) => event.type).at(-1)).toBe('RUN_FINISHED');
    for (const { message } of events) expect(message.properties.headers?.[DISPATCH_TOKEN_HEADER]).toBe(request.context.dispatchToken);
  });

  it.each(['superseded', 'refused'] as const)('a claim refused as %s: the step is acknowledged and dropped, nothing published, nothing dead-lettered', async (reason) => {
    policy = () => ({ granted: false, reason });
    const deadBefore = (await channel.checkQueue(names.deadLetterQueue)).messageCount;
    const callsBefore = caller.calls.length;
    const request = requestFor('show the staff');
    publishRequest(request);

    await waitFor(() => actionsOf(request).includes('claim'));
    await waitFor(async () => (await channel.checkQueue(names.runsQueue)).messageCount === 0 && (await unackedCount(names.runsQueue)) === 0);
    await new Promise((resolve) => setTimeout(resolve, 200));

    expect(eventsOf(request.context.run.runId)).toEqual([]);
    expect(caller.calls.length).toBe(callsBefore);
    expect(actionsOf(request)).toEqual(['claim']);
    expect((await channel.checkQueue(names.deadLetterQueue)).messageCount).toBe(deadBefore);
  });

  it('a claim nobody answers (the server is down): dropped within the call timeout and acknowledged, nothing published', async () => {
    policy = () => undefined;
    const request = requestFor('show the staff');
    const started = Date.now();
    publishRequest(request);

    await waitFor(() => actionsOf(request).includes('claim'));
    const { runId } = request.context.run;
    await waitFor(() => warnings.some(({ message }) => message.includes(runId) && message.includes('dropped before it ran')));
    // rabbitmqctl reports a quorum queue's counts a few seconds late: polled, never read once.
    await waitFor(async () => (await channel.checkQueue(names.runsQueue)).messageCount === 0 && (await unackedCount(names.runsQueue)) === 0);

    const dropped = warnings.find(({ message }) => message.includes(runId) && message.includes('dropped before it ran'));
    expect((dropped?.at ?? 0) - started).toBeGreaterThanOrEqual(TOOL_TIMEOUT_MS - 50);
    expect(eventsOf(request.context.run.runId)).toEqual([]);
  });

  it('a cancel mid-step (renew refused as cancelled): the step stops, is acknowledged, and publishes nothing more, not even RUN_ERROR', async () => {
    let cancelled = false;
    const request = requestFor('show the staff');
    policy = ({ action }) => (action === 'renew' && cancelled ? { granted: false, reason: 'cancelled' } : { granted: true, leaseMs: 900 });
    const { runId } = request.context.run;
    caller.close();
    publishRequest(request);

    await waitFor(() => eventsOf(runId).some(({ event }) => event.type === 'TOOL_CALL_END'));
    // Held mid-step, renewing every 300 ms.
    await waitFor(() => actionsOf(request).filter((action) => action === 'renew').length >= 2);
    // Polled: rabbitmqctl reports a quorum queue's counts a few seconds late.
    await waitFor(async () => (await unackedCount(names.runsQueue)) === 1);
    const publishedBefore = eventsOf(runId).length;
    cancelled = true;

    await waitFor(async () => (await unackedCount(names.runsQueue)) === 0);
    caller.release();
    await new Promise((resolve) => setTimeout(resolve, 300));

    const types = eventsOf(runId).map(({ event }) => event.type);
    expect(types.length).toBe(publishedBefore);
    expect(types).not.toContain('TOOL_CALL_RESULT');
    expect(types).not.toContain('RUN_ERROR');
    expect(types).not.toContain('RUN_FINISHED');
    expect(actionsOf(request).at(-1)).toBe('renew');
    expect(actionsOf(request)).not.toContain('release');
  });
});
