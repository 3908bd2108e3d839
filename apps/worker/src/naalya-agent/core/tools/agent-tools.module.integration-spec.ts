import { randomUUID } from 'node:crypto';
import { Test } from '@nestjs/testing';
import { generateMessageSigningKeyPair, rmqNames } from '@naalya/rmq';
import { connect, type ChannelModel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '../../../app/config/worker-config.js';
import { AGENT_TOOL_CALLER, type AgentToolCaller } from './agent-tool-caller.js';
import { AgentToolService } from './agent-tool.service.js';
import { AgentToolsModule } from './agent-tools.module.js';
import { listStaffPayload } from './tool-context.fixture.js';

const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
// Never connected to: the tool hop alone needs no checkpoint database.
const CHECKPOINT_DATABASE_URL = 'postgres://naalya_checkpoint:unused@127.0.0.1:5432/naalya';

describe('AgentToolsModule', () => {
  const queue = `agent-tools.test-${randomUUID().slice(0, 8)}`;
  const exchange = rmqNames(queue).toolsExchange;
  let connection: ChannelModel;

  beforeAll(async () => {
    connection = await connect(RABBITMQ_URL);
    const channel = await connection.createChannel();
    await channel.assertQueue(queue, { durable: false });
    await channel.assertExchange(exchange, 'direct', { durable: false });
    await channel.bindQueue(queue, exchange, queue);
    await channel.consume(
      queue,
      (message) => {
        if (!message) return;
        const { id } = JSON.parse(message.content.toString()) as { id: string };
        const reply = { id, response: { data: [], scopeContext: 'from the module test' }, isDisposed: true };
        channel.sendToQueue(message.properties.replyTo, Buffer.from(JSON.stringify(reply)), {
          correlationId: message.properties.correlationId,
        });
      },
      { noAck: true },
    );
  });

  afterAll(async () => {
    const channel = await connection.createChannel();
    await channel.deleteQueue(queue);
    await channel.deleteExchange(exchange);
    await connection.close();
  });

  it('provides AgentToolService under the AgentToolCaller token, configured from the worker config', async () => {
    const config = loadWorkerConfig({
      RABBITMQ_URL,
      CHECKPOINT_DATABASE_URL,
      RUN_SIGNING_PUBLIC_KEYS: generateMessageSigningKeyPair().publicKey,
      AGENT_TOOLS_QUEUE: queue,
      TOOL_CALL_TIMEOUT_MS: '2000',
    });
    const moduleRef = await Test.createTestingModule({ imports: [AgentToolsModule.forRoot(config)] }).compile();
    await moduleRef.init();
    try {
      const toolCaller = moduleRef.get<AgentToolCaller>(AGENT_TOOL_CALLER);
      expect(toolCaller).toBeInstanceOf(AgentToolService);
      expect(toolCaller).toBe(moduleRef.get(AgentToolService));
      expect(toolCaller.timeoutMs).toBe(2000);
      expect(await toolCaller.call('list.staff', listStaffPayload())).toEqual({ data: [], scopeContext: 'from the module test' });
    } finally {
      await moduleRef.close();
    }
  });
});
