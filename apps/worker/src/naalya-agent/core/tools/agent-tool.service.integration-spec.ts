import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type Channel, type ChannelModel, type MessageProperties } from 'amqplib';
import { Logger } from '@nestjs/common';
import { rmqNames } from '@naalya/rmq';
import { closeConnectionByName } from '@naalya/rmq/test-broker';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { AgentToolService } from './agent-tool.service.js';
import { declareToolsQueue, dropConnectionOnceDelivered, openToolsOnBroker, startLedgerResponder, type ToolsOnBroker } from '../../testing/tools-broker.fixture.js';
import { createDepartmentPayload, listStaffPayload } from './tool-context.fixture.js';

const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const UNREACHABLE_URL = 'amqp://worker:s3cret-pass@127.0.0.1:1';
const TIMEOUT_MS = 800;

const READ_TIMEOUT_SENTENCE =
  'The "list.staff" tool timed out, the platform may be slow and could still be processing the request. ' +
  'This is an infrastructure issue, not a problem with your request. ' +
  'Do not retry this call; tell the user it is unavailable right now.';
const READ_UNREACHABLE_SENTENCE =
  'The "list.staff" tool could not reach the platform or did not get a usable answer back. ' +
  'This is an infrastructure issue, not a problem with your request. ' +
  'Do not retry this call; tell the user it is unavailable right now.';

type Received = { pattern: string; data: unknown; id: string; properties: MessageProperties };
type Reply = { response: unknown } | { err: unknown } | { raw: unknown } | 'no reply';

// A stand-in for the server transport in raw amqplib: it answers the way Nest's client expects,
// { id, response | err, isDisposed: true } to replyTo with the request's correlationId.
const startResponder = async (channel: Channel, queue: string, answer: (request: Received) => Reply, delayMs = 0) => {
  const received: Received[] = [];
  const { consumerTag } = await channel.consume(
    queue,
    (message) => {
      if (!message) return;
      const packet = JSON.parse(message.content.toString()) as Omit<Received, 'properties'>;
      const request = { ...packet, properties: message.properties };
      received.push(request);
      const reply = answer(request);
      if (reply === 'no reply') return;
      const body = 'raw' in reply ? reply.raw : { id: packet.id, ...reply, isDisposed: true };
      const send = () =>
        channel.sendToQueue(message.properties.replyTo, Buffer.from(JSON.stringify(body)), {
          correlationId: message.properties.correlationId,
        });
      if (delayMs > 0) setTimeout(send, delayMs);
      else send();
    },
    { noAck: true },
  );
  return { received, stop: () => channel.cancel(consumerTag) };
};

const timed = async <T>(work: () => Promise<T>) => {
  const started = Date.now();
  const value = await work();
  return { value, elapsedMs: Date.now() - started };
};

describe('AgentToolService against real RabbitMQ', () => {
  const queue = `agent-tools.test-${randomUUID().slice(0, 8)}`;
  const exchange = rmqNames(queue).toolsExchange;
  let connection: ChannelModel;
  let channel: Channel;
  let service: AgentToolService;
  let stopResponder: (() => Promise<unknown>) | undefined;

  beforeAll(async () => {
    connection = await connect(RABBITMQ_URL);
    channel = await connection.createChannel();
    await declareToolsQueue(channel, queue, exchange);
    service = new AgentToolService({ rabbitmqUrl: RABBITMQ_URL, toolsQueue: queue, timeoutMs: TIMEOUT_MS });
    await service.onModuleInit();
  });

  beforeEach(async () => {
    await channel.purgeQueue(queue);
  });

  afterEach(async () => {
    await stopResponder?.();
    stopResponder = undefined;
  });

  afterAll(async () => {
    await service?.onModuleDestroy();
    await channel?.deleteQueue(queue);
    await channel?.deleteExchange(exchange);
    await connection?.close();
  });

  const respond = async (answer: (request: Received) => Reply, delayMs = 0) => {
    const responder = await startResponder(channel, queue, answer, delayMs);
    stopResponder = responder.stop;
    return responder.received;
  };

  it('passes a success result through unchanged, and the envelope crosses intact under the event pattern', async () => {
    const result = { data: [{ id: 'staff-1', fullName: 'Ada Nakato' }], scopeContext: 'You can see staff across the whole school.' };
    const received = await respond(() => ({ response: result }));
    const payload = listStaffPayload();

    expect(await service.call('list.staff', payload)).toEqual(result);
    expect(received).toHaveLength(1);
    expect(received[0].pattern).toBe('list.staff');
    expect(received[0].data).toEqual(payload);
  });

  it("publishes with direct reply-to, an expiration equal to the time left until the call's deadline (at most the timeout) and the validated broker user", async () => {
    const received = await respond(() => ({ response: { data: [], scopeContext: 'ok' } }));
    await service.call('list.staff', listStaffPayload());

    expect(received[0].properties.replyTo).toMatch(/^amq\.rabbitmq\.reply-to/);
    expect(Number(received[0].properties.expiration)).toBeLessThanOrEqual(TIMEOUT_MS);
    expect(Number(received[0].properties.expiration)).toBeGreaterThan(TIMEOUT_MS - 100);
    expect(received[0].properties.userId).toBe('guest');
  });

  it('passes an { error } result (a semantic refusal) through untouched', async () => {
    await respond(() => ({ response: { error: 'Forbidden resource', code: 'PERMISSION_DENIED' } }));

    expect(await service.call('create.department', createDepartmentPayload())).toEqual({ error: 'Forbidden resource', code: 'PERMISSION_DENIED' });
  });

  it('timeout of a read: the infrastructure sentence naming the event, within timeout + 1 s', async () => {
    await respond(() => 'no reply');
    const { value, elapsedMs } = await timed(() => service.call('list.staff', listStaffPayload()));

    expect(value).toEqual({ error: READ_TIMEOUT_SENTENCE, code: 'TOOL_TIMED_OUT' });
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + 1_000);
  });

  it('timeout of a write: the outcome is unknown and may still complete, never a failure', async () => {
    await respond(() => 'no reply');
    const { value, elapsedMs } = await timed(() => service.call('create.department', createDepartmentPayload()));

    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + 1_000);
    expect('error' in value).toBe(true);
    const message = 'error' in value ? value.error : '';
    expect(message).toContain('The "create.department" tool timed out');
    expect(message).toContain('The outcome is unknown: the change may still complete.');
    expect(message).toContain('check whether the change was made before trying again');
    expect(message).toContain('Do not retry this call');
    // The model can check for itself, with the call id the server's ledger keys the outcome by.
    expect(message).toMatch(/get_tool_call_outcome and callId "[^"]{8,}"/);
    expect(message).not.toMatch(/\bfail/i);
    expect(message).not.toContain('\u2014');
  });

  it('an error reply from the server (it threw) becomes the infrastructure sentence, not a throw', async () => {
    await respond(() => ({ err: { status: 'error', message: 'Internal server error' } }));

    expect(await service.call('list.staff', listStaffPayload())).toEqual({ error: READ_UNREACHABLE_SENTENCE, code: 'PLATFORM_UNREACHABLE' });
  });

  it('an unreadable reply (not a tool result) becomes the infrastructure sentence', async () => {
    await respond(() => ({ response: 'There is no matching message handler defined in the remote service.' }));

    expect(await service.call('list.staff', listStaffPayload())).toEqual({ error: READ_UNREACHABLE_SENTENCE, code: 'PLATFORM_UNREACHABLE' });
  });

  it('a late reply after a timeout is dropped and the next call gets its own answer', async () => {
    let count = 0;
    await respond(() => ({ response: { data: { call: ++count }, scopeContext: 'ok' } }), TIMEOUT_MS + 400);

    expect(await service.call('list.staff', listStaffPayload())).toEqual({ error: READ_TIMEOUT_SENTENCE, code: 'TOOL_TIMED_OUT' });
    await stopResponder?.();
    stopResponder = (await startResponder(channel, queue, () => ({ response: { data: { call: 'second' }, scopeContext: 'ok' } }))).stop;
    expect(await service.call('list.staff', listStaffPayload())).toEqual({ data: { call: 'second' }, scopeContext: 'ok' });
  });

  it('a request no server consumes expires from the queue, so a server that comes back later cannot run it', async () => {
    const pending = service.call('create.department', createDepartmentPayload());
    await sleep(150);
    expect((await channel.checkQueue(queue)).messageCount).toBe(1);

    expect('error' in (await pending)).toBe(true);
    let messageCount = 1;
    for (let attempt = 0; attempt < 20 && messageCount > 0; attempt += 1) {
      await sleep(100);
      ({ messageCount } = await channel.checkQueue(queue));
    }
    expect(messageCount).toBe(0);
  });
});

describe('AgentToolService with the broker unreachable', () => {
  const service = new AgentToolService({ rabbitmqUrl: UNREACHABLE_URL, toolsQueue: 'agent-tools.unreachable', timeoutMs: TIMEOUT_MS });

  afterAll(async () => {
    await service.onModuleDestroy();
  });

  it('a read gets the infrastructure sentence, not a throw, within timeout + 1 s', async () => {
    const { value, elapsedMs } = await timed(() => service.call('list.staff', listStaffPayload()));

    expect(value).toEqual({ error: READ_UNREACHABLE_SENTENCE, code: 'PLATFORM_UNREACHABLE' });
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + 1_000);
  });

  it('a write gets "outcome unknown", never a failure', async () => {
    const value = await service.call('create.department', createDepartmentPayload());
    const message = 'error' in value ? value.error : '';

    expect(message).toContain('The "create.department" tool could not reach the platform');
    expect(message).toContain('The outcome is unknown: the change may still complete.');
    expect(message).not.toMatch(/\bfail/i);
  });

  it('logs the transport failure with the event and callId, and masks the broker password', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      await service.call('list.staff', listStaffPayload());
      const logged = warn.mock.calls.map((call) => String(call[0])).join('\n');
      expect(logged).toContain('"list.staff"');
      expect(logged).toContain(listStaffPayload().meta.callId);
      expect(logged).not.toContain('s3cret-pass');
    } finally {
      warn.mockRestore();
    }
  });

  it('start-up fails loudly, naming the queue', async () => {
    const starting = new AgentToolService({ rabbitmqUrl: UNREACHABLE_URL, toolsQueue: 'agent-tools.unreachable', timeoutMs: TIMEOUT_MS });

    await expect(starting.onModuleInit()).rejects.toThrow(/Cannot connect to RabbitMQ for the "agent-tools\.unreachable" queue/);
  });
});

describe('AgentToolService across a dropped connection (real RabbitMQ)', () => {
  let tools: ToolsOnBroker;

  beforeAll(async () => {
    tools = await openToolsOnBroker(RABBITMQ_URL, 'test-resend');
  });

  afterAll(async () => {
    await tools?.close();
  });

  it('a write whose reply the dropped connection lost is sent again unchanged and answered from the ledger: one effect, one answer', async () => {
    const answer = { data: { id: 'dept-1' }, scopeContext: 'ok', auditId: 'audit-1' };
    const server = await startLedgerResponder(tools.channel, tools.queue, answer);
    const { deliveries } = server;
    try {
      const payload = { ...createDepartmentPayload(), meta: { callId: randomUUID(), deadline: Date.now() + 10_000, dispatchToken: 'token-1' } };
      const started = Date.now();
      const pending = tools.service.call('create.department', payload);
      await dropConnectionOnceDelivered(deliveries, tools.connectionName);

      expect(await pending).toEqual(answer);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(server.effects()).toBe(1);
      expect(deliveries).toHaveLength(2);
      // The same call: call id, arguments, identity and dispatch token, under the same correlation id.
      expect(deliveries[1].data).toEqual(deliveries[0].data);
      expect(deliveries[1].properties.correlationId).toBe(deliveries[0].properties.correlationId);
      // The re-send expires with the time left, never later than the first.
      expect(Number(deliveries[1].properties.expiration)).toBeLessThan(Number(deliveries[0].properties.expiration));
      expect(tools.service.resends).toBe(1);
    } finally {
      await server.stop();
    }
  });

  it('a read made as the connection drops waits for it within its deadline and is answered, not refused at once', async () => {
    const { channel, service, connectionName } = tools;
    const { consumerTag } = await channel.consume(
      tools.queue,
      (message) => {
        if (!message) return;
        const packet = JSON.parse(message.content.toString()) as { id: string };
        channel.sendToQueue(message.properties.replyTo, Buffer.from(JSON.stringify({ id: packet.id, response: { data: [], scopeContext: 'ok' }, isDisposed: true })), {
          correlationId: message.properties.correlationId,
        });
      },
      { noAck: true },
    );
    try {
      await closeConnectionByName(connectionName);
      expect(await service.call('list.staff', { ...listStaffPayload(), meta: { callId: randomUUID(), deadline: Date.now() + 10_000 } })).toEqual({
        data: [],
        scopeContext: 'ok',
      });
    } finally {
      await channel.cancel(consumerTag);
    }
  });
});
