import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type Channel, type ChannelModel, type MessageProperties } from 'amqplib';
import { rmqNames } from '@naalya/rmq';
import { closeConnectionByName } from '@naalya/rmq/test-broker';
import { AgentToolService } from '../core/tools/agent-tool.service.js';

/** The tools queue bound to its exchange, as the topology setup declares it in production (the client declares nothing). */
export const declareToolsQueue = async (channel: Channel, queue: string, exchange: string): Promise<void> => {
  await channel.assertQueue(queue, { durable: false });
  await channel.assertExchange(exchange, 'direct', { durable: false });
  await channel.bindQueue(queue, exchange, queue);
};

export type ToolsOnBroker = {
  queue: string;
  channel: Channel;
  service: AgentToolService;
  /** The service's connection name, which closeConnectionByName drops to lose a reply in flight. */
  connectionName: string;
  close: () => Promise<void>;
};

/**
 * A tools queue of the suite's own on the real broker, a channel on it for the test's stand-in server, and an
 * AgentToolService on a named connection with a deadline long enough to outlive a dropped connection and its re-send.
 */
export const openToolsOnBroker = async (url: string, label: string): Promise<ToolsOnBroker> => {
  const queue = `agent-tools.${label}-${randomUUID().slice(0, 8)}`;
  const exchange = rmqNames(queue).toolsExchange;
  const connectionName = `naalya-worker-test-${randomUUID().slice(0, 8)}`;
  let connection: ChannelModel | undefined;
  let channel: Channel | undefined;
  let service: AgentToolService | undefined;
  const close = async () => {
    await service?.onModuleDestroy();
    await channel?.deleteQueue(queue);
    await channel?.deleteExchange(exchange);
    await connection?.close();
  };
  try {
    connection = await connect(url);
    channel = await connection.createChannel();
    await declareToolsQueue(channel, queue, exchange);
    service = new AgentToolService({ rabbitmqUrl: url, toolsQueue: queue, timeoutMs: 10_000, connectionName });
    await service.onModuleInit();
    return { queue, channel, service, connectionName, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
};

export type LedgerDelivery = { id: string; pattern: string; data: { meta: { callId: string } } & Record<string, unknown>; properties: MessageProperties };

/**
 * The server as far as an idempotent write goes, answering the way Nest's client expects: a ledger by call id whose
 * first delivery commits and whose reply never leaves; a call id already in the ledger is answered from it.
 */
export const startLedgerResponder = async (channel: Channel, queue: string, answer: unknown) => {
  const ledger = new Map<string, unknown>();
  const deliveries: LedgerDelivery[] = [];
  let effects = 0;
  const { consumerTag } = await channel.consume(
    queue,
    (message) => {
      if (!message) return;
      const packet = JSON.parse(message.content.toString()) as Omit<LedgerDelivery, 'properties'>;
      deliveries.push({ ...packet, properties: message.properties });
      const { callId } = packet.data.meta;
      if (!ledger.has(callId)) {
        effects += 1;
        ledger.set(callId, answer);
        return;
      }
      channel.sendToQueue(message.properties.replyTo, Buffer.from(JSON.stringify({ id: packet.id, response: ledger.get(callId), isDisposed: true })), {
        correlationId: message.properties.correlationId,
      });
    },
    { noAck: true },
  );
  return { deliveries, effects: () => effects, stop: () => channel.cancel(consumerTag) };
};

/** Drops the connection once the first delivery is in: its reply, had there been one, is gone with it. */
export const dropConnectionOnceDelivered = async (deliveries: readonly unknown[], connectionName: string): Promise<void> => {
  for (let waited = 0; deliveries.length === 0 && waited < 5_000; waited += 25) await sleep(25);
  await closeConnectionByName(connectionName);
};
