import { connect, type Channel, type Options } from 'amqplib';
import { runEventsIngestQueue, type RmqNames } from './rmq-names.js';

export type RmqTopologyOptions = {
  /**
   * Quorum queues replicate and count deliveries (`deliveryLimit`), classic queues do neither. Changing the type or any
   * argument of an existing queue is refused by the broker (406 PRECONDITION_FAILED): delete and redeclare it.
   * Default 'classic'.
   */
  queueType?: 'classic' | 'quorum';
  /** Quorum queues only: a message delivered more often than this is dead-lettered (a poison message). Default 5. */
  deliveryLimit?: number;
};

/**
 * The work queues carry no `x-message-ttl` (each call carries its own `expiration`, no longer than the caller waits) and
 * no `x-max-length` (a full queue would drop or refuse calls silently instead of letting callers time out).
 */
const workQueueOptions = (names: RmqNames, options: RmqTopologyOptions): Options.AssertQueue => {
  const queueType = options.queueType ?? 'classic';
  return {
    durable: true,
    arguments: {
      'x-dead-letter-exchange': names.deadLetterExchange,
      // No x-queue-type for classic: the argument set stays what older declarations of the same queue used.
      ...(queueType === 'quorum' ? { 'x-queue-type': 'quorum', 'x-delivery-limit': options.deliveryLimit ?? 5 } : {}),
    },
  };
};

const withChannel = async <T>(url: string, work: (channel: Channel) => Promise<T>): Promise<T> => {
  const connection = await connect(url, { noDelay: true });
  // A refused declaration closes the channel with an error event; the rejected promise below reports it instead.
  connection.on('error', () => undefined);
  try {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    return await work(channel);
  } finally {
    await connection.close().catch(() => undefined);
  }
};

/**
 * Declares, once and with their arguments, everything the server and the worker use; consumers and clients then only
 * check (`noAssert: true`). Declaring again with the same options changes nothing.
 */
export const declareTopology = (url: string, names: RmqNames, options: RmqTopologyOptions = {}): Promise<void> =>
  withChannel(url, async (channel) => {
    // Fanout: every refused, expired or over-delivered message lands in the one dead-letter queue, whatever its routing key.
    await channel.assertExchange(names.deadLetterExchange, 'fanout', { durable: true });
    await channel.assertQueue(names.deadLetterQueue, { durable: true });
    await channel.bindQueue(names.deadLetterQueue, names.deadLetterExchange, '');
    await channel.assertQueue(names.toolsQueue, workQueueOptions(names, options));
    await channel.assertExchange(names.toolsExchange, 'direct', { durable: true });
    await channel.bindQueue(names.toolsQueue, names.toolsExchange, names.toolsQueue);
    await channel.assertQueue(names.runsQueue, workQueueOptions(names, options));
    await channel.assertExchange(names.runEventsExchange, 'topic', { durable: true });
    const ingest = workQueueOptions(names, options);
    await channel.assertQueue(runEventsIngestQueue(names), { ...ingest, arguments: { ...ingest.arguments, 'x-single-active-consumer': true } });
    await channel.bindQueue(runEventsIngestQueue(names), names.runEventsExchange, '#');
  });

/** Removes what declareTopology made, messages included. For tests. */
export const deleteTopology = (url: string, names: RmqNames): Promise<void> =>
  withChannel(url, async (channel) => {
    await channel.deleteQueue(names.toolsQueue);
    await channel.deleteQueue(names.runsQueue);
    await channel.deleteQueue(runEventsIngestQueue(names));
    await channel.deleteQueue(names.deadLetterQueue);
    await channel.deleteExchange(names.deadLetterExchange);
    await channel.deleteExchange(names.runEventsExchange);
    await channel.deleteExchange(names.toolsExchange);
  });
