import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { AGENT_RUN_PATTERN, agentRunEventSchema, runEventBatchSchema, type AgentRunEvent, type AgentRunRequest } from '@naalya/agent-tools';
import {
  MESSAGE_SIGNATURE_HEADER,
  declareTopology,
  deleteTopology,
  generateMessageSigningKeyPair,
  parseMessageSigningKey,
  parseMessageVerifyingKeys,
  rmqNames,
  runsDeadLetterQueue,
  signMessage,
  type MessageSigningKeyPair,
} from '@naalya/rmq';
import { MemorySaver } from '@langchain/langgraph';
import { Logger, type INestMicroservice } from '@nestjs/common';
import { connect, type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type Options } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ScriptedChatModel } from '../core/model/scripted-chat-model.js';
import { scriptedPolicy } from '../core/model/scripted-policy.js';
import { schoolContext } from '../core/tools/tool-context.fixture.js';
import { FakeRunLeases, TEST_DISPATCH_TOKEN } from '../testing/fake-run-leases.fixture.js';
import { FakeToolCaller } from '../testing/fake-tool-caller.fixture.js';
import { startRunsConsumer } from '../testing/runs-consumer.fixture.js';
import { AgentRunExecutor } from './agent-run.executor.js';
import { RunEventPublisher } from './run-event.publisher.js';
import { RunStepAuthenticity } from './run-step-authenticity.js';
import { FakeRunUsage } from '../testing/fake-run-usage.fixture.js';

const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-test-${suffix}`, `agent-runs-test-${suffix}`);
const eventsQueue = `${names.runEventsExchange}.test-${suffix}`;

// The server's broker user, of this file's own: it may only publish to the default exchange (the runs queue). The
// consumer runs only its steps, signed by the current or the previous run signing key; guest, a broker administrator,
// plays the attacker.
const SERVER_USER = { name: `naalya_server_runs_${suffix}`, password: `server-${suffix}` };
const serverUrl = (() => {
  const url = new URL(RABBITMQ_URL);
  url.username = SERVER_USER.name;
  url.password = SERVER_USER.password;
  return url.href;
})();
const CURRENT_KEY = generateMessageSigningKeyPair('current');
const PREVIOUS_KEY = generateMessageSigningKeyPair('previous');

const rabbitmqctl = (...args: string[]) => promisify(execFile)('rabbitmqctl', ['-q', ...args]);

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
let serverConnection: ChannelModel;
let serverChannel: ConfirmChannel;
let app: INestMicroservice;
let publisher: RunEventPublisher;
const caller = new GatedToolCaller().answer('list.staff', { data: [{ id: 's1', fullName: 'Ada Nakato' }], scopeContext: 'You can see the whole school.' });
const received: Array<{ event: AgentRunEvent; message: ConsumeMessage }> = [];

const requestFor = (message: string): AgentRunRequest => ({
  kind: 'start',
  context: { ...schoolContext(), run: { runId: randomUUID(), threadId: randomUUID() }, dispatchToken: TEST_DISPATCH_TOKEN },
  message,
});

const confirmed = (send: (callback: (error: unknown) => void) => void) =>
  new Promise<void>((resolve, reject) => send((error) => (error ? reject(new Error(String(error))) : resolve())));

const bodyOf = (packet: unknown): Buffer => Buffer.from(JSON.stringify(packet));
const signatureOf = (body: Buffer, pair: MessageSigningKeyPair = CURRENT_KEY) => signMessage(body, parseMessageSigningKey(pair.privateKey));

/** As the server publishes a step: from its broker user, with user_id, the body signed (or, for a test, another header or none). */
const publishAsServer = (body: Buffer, signature: string | null = signatureOf(body)) =>
  confirmed((callback) =>
    serverChannel.sendToQueue(
      names.runsQueue,
      body,
      {
        persistent: true,
        contentType: 'application/json',
        userId: SERVER_USER.name,
        messageId: randomUUID(),
        headers: signature === null ? {} : { [MESSAGE_SIGNATURE_HEADER]: signature },
      },
      callback,
    ),
  );

const publishRequest = (packet: unknown) => publishAsServer(bodyOf(packet));

/** As a broker administrator can publish anything to any queue. */
const publishAsAdmin = (body: Buffer, properties: Options.Publish = {}) =>
  channel.sendToQueue(names.runsQueue, body, { persistent: true, contentType: 'application/json', ...properties });

const eventsOf = (runId: string) => received.filter(({ event }) => event.runId === runId);

beforeAll(async () => {
  await declareTopology(RABBITMQ_URL, names);
  await rabbitmqctl('add_user', SERVER_USER.name, SERVER_USER.password);
  await rabbitmqctl('set_permissions', '-p', '/', SERVER_USER.name, '^$', '^amq\\.default$', '^$');
  serverConnection = await connect(serverUrl);
  serverChannel = await serverConnection.createConfirmChannel();
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

  publisher = new RunEventPublisher({ rabbitmqUrl: RABBITMQ_URL, exchange: names.runEventsExchange });
  await publisher.onModuleInit();
  const executor = new AgentRunExecutor({
    toolCaller: caller,
    checkpointer: new MemorySaver(),
    events: publisher,
    leases: new FakeRunLeases(),
    usage: new FakeRunUsage(),
    chatModel: () => new ScriptedChatModel(scriptedPolicy),
  });
  app = await startRunsConsumer({
    url: RABBITMQ_URL,
    names,
    executor,
    authenticity: new RunStepAuthenticity({
      serverBrokerUser: SERVER_USER.name,
      publicKeys: parseMessageVerifyingKeys(`${CURRENT_KEY.publicKey},${PREVIOUS_KEY.publicKey}`),
    }),
  });
});

afterAll(async () => {
  await app?.close();
  await publisher?.onModuleDestroy();
  await connection?.close();
  await serverConnection?.close();
  await deleteTopology(RABBITMQ_URL, names);
  await rabbitmqctl('delete_user', SERVER_USER.name).catch(() => undefined);
});

describe('the runs queue consumer over real RabbitMQ', () => {
  it('runs a step from the queue and publishes its events in order, routed by run id; the message is acked only after the step finished', async () => {
    const request = requestFor('show the staff');
    const { runId } = request.context.run;
    caller.close();
    await publishRequest({ pattern: AGENT_RUN_PATTERN, data: request });

    await waitFor(() => caller.calls.length === 0 && eventsOf(runId).some(({ event }) => event.type === 'TOOL_CALL_START'));
    // Mid-step: the tool call is held, so the run message is delivered but not yet acknowledged.
    await waitFor(async () => (await unackedCount(names.runsQueue)) === 1, 15_000);
    expect(await unackedCount(names.runsQueue)).toBe(1);
    expect(eventsOf(runId).map(({ event }) => event.type)).toEqual(['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END']);

    caller.release();
    await waitFor(() => eventsOf(runId).some(({ event }) => event.type === 'RUN_FINISHED'));
    await waitFor(async () => (await unackedCount(names.runsQueue)) === 0, 15_000);

    const events = eventsOf(runId);
    // The reply streams word by word: one start, its deltas, one end.
    const kinds = events.map(({ event }) => event.type).filter((type, index, all) => type !== 'TEXT_MESSAGE_CONTENT' || all[index - 1] !== type);
    expect(kinds).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(events.filter(({ event }) => event.type === 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(3);
    for (const { event, message } of events) {
      expect(agentRunEventSchema.safeParse(event).success).toBe(true);
      expect(message.fields.routingKey).toBe(runId);
      expect(message.properties).toMatchObject({ deliveryMode: 2, contentType: 'application/json', userId: 'guest' });
      expect(message.properties.messageId).toEqual(expect.any(String));
      expect(message.properties.headers).toMatchObject({ 'x-dispatch-token': TEST_DISPATCH_TOKEN });
    }
    // One message id per batch: the ids of successive messages never repeat.
    const messages = [...new Set(events.map(({ message }) => message))];
    expect(new Set(messages.map((message) => message.properties.messageId)).size).toBe(messages.length);
    expect(events[1]?.event).toMatchObject({ toolCallName: 'list_staff', metadata: { event: 'list.staff' } });
    const text = events.map(({ event }) => (event.type === 'TEXT_MESSAGE_CONTENT' ? event.delta : '')).join('');
    expect(text).toContain('[scripted model] I found 1 staff: Ada Nakato.');
    expect(await unackedCount(names.runsQueue)).toBe(0);
    expect((await channel.checkQueue(names.runsQueue)).messageCount).toBe(0);
  }, 45_000);

  it('dead-letters a malformed request (from the server, signed; into the runs dead-letter queue, which the server reads) and publishes nothing for it', async () => {
    const deadLetters = runsDeadLetterQueue(names);
    const before = (await channel.checkQueue(deadLetters)).messageCount;
    const threadId = randomUUID();
    await publishRequest({ pattern: AGENT_RUN_PATTERN, data: { kind: 'start', context: { run: { runId: 'bad-run', threadId } }, message: 'hi' } });

    await waitFor(async () => (await channel.checkQueue(deadLetters)).messageCount > before);

    expect((await channel.checkQueue(deadLetters)).messageCount).toBe(before + 1);
    expect(received.filter(({ event }) => event.threadId === threadId || event.runId === 'bad-run')).toEqual([]);
    await waitFor(async () => (await unackedCount(names.runsQueue)) === 0, 15_000);
    expect(await unackedCount(names.runsQueue)).toBe(0);
  });
});

describe('run steps the server did not publish and sign', () => {
  const settled = async () => (await channel.checkQueue(names.runsQueue)).messageCount === 0 && (await unackedCount(names.runsQueue)) === 0;

  type Forger = (packet: { pattern: string; data: AgentRunRequest }) => Promise<void> | void;

  /**
   * Each forger publishes one step asking for the staff list, on a run of its own. The genuine step published after
   * them is the control: once its run has finished, the consumer was live and publishing events all along, so the
   * forged runs' silence means they were not run.
   */
  const expectDroppedUnrun = async (forgers: Forger[]): Promise<string[]> => {
    const warn = vi.spyOn(Logger.prototype, 'warn');
    try {
      const deadLettersBefore = (await channel.checkQueue(runsDeadLetterQueue(names))).messageCount;
      const callsBefore = caller.calls.length;
      const forged: AgentRunRequest[] = [];
      for (const forge of forgers) {
        const request = requestFor('show the staff');
        forged.push(request);
        await forge({ pattern: AGENT_RUN_PATTERN, data: request });
      }
      const control = requestFor('show the staff');
      await publishRequest({ pattern: AGENT_RUN_PATTERN, data: control });

      await waitFor(() => eventsOf(control.context.run.runId).some(({ event }) => event.type === 'RUN_FINISHED'));
      await waitFor(settled);

      expect(eventsOf(control.context.run.runId).at(-1)?.event).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
      for (const [index, request] of forged.entries()) expect(eventsOf(request.context.run.runId), `forgery ${index}`).toEqual([]);
      // Only the control called a tool; every message was acknowledged, none dead-lettered or left to be redelivered.
      expect(caller.calls.length).toBe(callsBefore + 1);
      expect(await settled()).toBe(true);
      expect((await channel.checkQueue(runsDeadLetterQueue(names))).messageCount).toBe(deadLettersBefore);
      const securityEvents = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.startsWith('security event: run step refused'));
      expect(securityEvents).toHaveLength(forgers.length);
      // What was wrong, never what the step said.
      for (const line of securityEvents) expect(line).not.toMatch(/show the staff|Ada Nakato/);
      return securityEvents;
    } finally {
      warn.mockRestore();
    }
  };

  it('a well-formed step from a broker administrator is acknowledged and dropped unrun: unsigned, or replaying a genuine signature', async () => {
    const lines = await expectDroppedUnrun([
      (packet) => void publishAsAdmin(bodyOf(packet)),
      // The server's own signature over these exact bytes (as if copied off the wire), published by another user.
      (packet) => void publishAsAdmin(bodyOf(packet), { userId: 'guest', headers: { [MESSAGE_SIGNATURE_HEADER]: signatureOf(bodyOf(packet)) } }),
    ]);
    expect(lines[0]).toMatch(/published with no user_id, and only naalya_server_runs_\w+ publishes run steps/);
    expect(lines[1]).toMatch(/published with user_id "guest"/);
  });

  it("the broker itself refuses an administrator's publish claiming the server's user_id (the channel is closed), so that check cannot be forged", async () => {
    const forger = await connection.createChannel();
    const closed = new Promise<unknown>((resolve) => forger.once('error', resolve));
    const body = bodyOf({ pattern: AGENT_RUN_PATTERN, data: requestFor('show the staff') });
    forger.sendToQueue(names.runsQueue, body, { userId: SERVER_USER.name, headers: { [MESSAGE_SIGNATURE_HEADER]: signatureOf(body) } });
    expect(String(await closed)).toMatch(/PRECONDITION_FAILED|406/);
    await waitFor(settled);
    expect(await settled()).toBe(true);
  });

  it("a step from the server's broker user is dropped unrun unless its signature verifies: altered body, unknown key, another key under a known id, malformed or none", async () => {
    const stranger = generateMessageSigningKeyPair('stranger');
    const impostor = generateMessageSigningKeyPair('current');
    const lines = await expectDroppedUnrun([
      // A genuine signature of a genuine step, over a body changed after signing.
      async (packet) => {
        const signature = signatureOf(bodyOf(packet));
        const altered = { ...packet, data: { ...packet.data, message: 'create a department called Forged' } };
        await publishAsServer(bodyOf(altered), signature);
      },
      async (packet) => publishAsServer(bodyOf(packet), signatureOf(bodyOf(packet), stranger)),
      async (packet) => publishAsServer(bodyOf(packet), signatureOf(bodyOf(packet), impostor)),
      async (packet) => publishAsServer(bodyOf(packet), 'current.not-a-signature'),
      async (packet) => publishAsServer(bodyOf(packet), null),
    ]);
    expect(lines[0]).toMatch(/signature does not match its body \(key id "current"\)/);
    expect(lines[1]).toMatch(/names a key this worker does not hold \(key id "stranger"\)/);
    expect(lines[2]).toMatch(/signature does not match its body \(key id "current"\)/);
    expect(lines[3]).toMatch(/signature header is malformed/);
    expect(lines[4]).toMatch(/carries no signature/);
  });

  it('rotation: while the worker holds both keys, a step signed with the previous key runs', async () => {
    const request = requestFor('show the staff');
    const body = bodyOf({ pattern: AGENT_RUN_PATTERN, data: request });
    await publishAsServer(body, signatureOf(body, PREVIOUS_KEY));
    await waitFor(() => eventsOf(request.context.run.runId).some(({ event }) => event.type === 'RUN_FINISHED'));
    expect(eventsOf(request.context.run.runId).at(-1)?.event).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
  });
});
