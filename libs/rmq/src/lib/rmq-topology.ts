import type { Channel, ChannelModel, Options } from 'amqplib';
import { connectToAnyNode } from './broker-nodes.js';
import { describeBrokerError } from './rmq-connection.js';
import { runEventsIngestQueue, runsDeadLetterQueue, type RmqNames } from './rmq-names.js';

/** A tool call or run event delivered more often than this (quorum queues only) is dead-lettered. */
export const DEFAULT_DELIVERY_LIMIT = 5;
/** A run step redelivered more often than this (one that crashes every worker) is dead-lettered: 3 means four deliveries. */
export const DEFAULT_RUNS_DELIVERY_LIMIT = 3;
/** Each dead-letter queue keeps at most this many messages, dropping the oldest. */
export const DEFAULT_DEAD_LETTER_MAX_LENGTH = 10_000;
/** ... and at most this many bytes of bodies (a message may be up to 1 MiB), dropping the oldest. */
export const DEFAULT_DEAD_LETTER_MAX_BYTES = 64 * 1024 * 1024;

export type RmqTopologyOptions = {
  /**
   * The type of the tools queue, the run events ingest queue and both dead-letter queues (RABBITMQ_QUEUE_TYPE): quorum
   * on a cluster, so the loss of a node loses no message; classic for a single node. Quorum queues replicate and count
   * deliveries (`deliveryLimit`), classic queues do neither. Default 'classic'. The runs queue is a quorum queue
   * whatever this says (see runsDeliveryLimit).
   */
  queueType?: 'classic' | 'quorum';
  /** Quorum tools and ingest queues only: a message delivered more often than this is dead-lettered. Default 5. */
  deliveryLimit?: number;
  /**
   * The runs queue is always a quorum queue, the only kind that counts deliveries: a step delivered to a worker and
   * not acknowledged (the worker crashed, or requeued it) more than this many times is dead-lettered into
   * runsDeadLetterQueue, where the server reads it and fails its run. Default 3 (four deliveries in all).
   */
  runsDeliveryLimit?: number;
  /** Both dead-letter queues keep at most this many messages, dropping the oldest. Default 10 000. */
  deadLetterMaxLength?: number;
  /** Both dead-letter queues keep at most this many body bytes, dropping the oldest. Default 64 MiB. */
  deadLetterMaxBytes?: number;
  /** Told, in a sentence, of every queue deleted and declared again because its arguments changed. */
  log?: (line: string) => void;
};

/**
 * One queue of the topology. A broker refuses to declare an existing queue with other arguments (406
 * PRECONDITION_FAILED), so a queue whose arguments changed since an older release declared it is deleted and declared
 * again: `drop` whatever it holds (`loses` says what that costs), or, for a queue whose messages cannot be lost,
 * `only-if-empty` (otherwise the setup fails and says how to drain it).
 */
export type QueueDeclaration = { queue: string; options: Options.AssertQueue; onChange: 'drop' | 'only-if-empty'; loses: string };

/** A queue declareTopology deleted and declared again, and how many messages went with it. */
export type QueueMigration = { queue: string; droppedMessages: number };

type QueueType = NonNullable<RmqTopologyOptions['queueType']>;

/**
 * A replicated queue whose leader goes to the node leading the fewest queues (`balanced`, RabbitMQ 3.10+), not to the
 * node the setup happened to connect to (`client-local`, the default): otherwise every queue of a topology is led by one
 * node, which then carries all the traffic and whose loss makes every queue elect at once.
 */
const QUORUM = { 'x-queue-type': 'quorum', 'x-queue-leader-locator': 'balanced' } as const;

/**
 * The one shape of a work queue (tools, runs, run events): durable, dead-lettering what it refuses, and, as a quorum
 * queue, replicated with a delivery limit. RabbitMQ 4 gives every quorum queue a delivery limit of 20 and drops what
 * passes it when no dead-letter exchange is set, so both are always set together here. No `x-message-ttl` (each call
 * carries its own `expiration`, no longer than the caller waits) and no `x-max-length` (a full queue would drop or
 * refuse calls silently instead of letting callers time out).
 */
const workQueue = (
  queueType: QueueType,
  deliveryLimit: number,
  deadLetter: { exchange: string; routingKey?: string },
  extra: Record<string, unknown> = {},
): Options.AssertQueue => ({
  durable: true,
  arguments: {
    // No x-queue-type for classic: the argument set stays what older declarations of the same queue used.
    ...(queueType === 'quorum' ? { ...QUORUM, 'x-delivery-limit': deliveryLimit } : {}),
    'x-dead-letter-exchange': deadLetter.exchange,
    ...(deadLetter.routingKey === undefined ? {} : { 'x-dead-letter-routing-key': deadLetter.routingKey }),
    ...extra,
  },
});

/**
 * Dead letters are kept for whoever looks (the general queue) or until the server reads them (run steps), never
 * without bound: past the length or byte limit the oldest go (`drop-head`, which quorum queues support too), so the
 * newest failures, the ones worth reading, stay. No TTL: a TTL would empty a queue nobody had looked at yet, while
 * doing nothing for a burst. On a cluster they are quorum queues like the work queues, so losing a node loses none.
 */
const deadLetterQueueOptions = (options: RmqTopologyOptions): Options.AssertQueue => ({
  durable: true,
  arguments: {
    ...(options.queueType === 'quorum' ? QUORUM : {}),
    'x-max-length': options.deadLetterMaxLength ?? DEFAULT_DEAD_LETTER_MAX_LENGTH,
    'x-max-length-bytes': options.deadLetterMaxBytes ?? DEFAULT_DEAD_LETTER_MAX_BYTES,
    'x-overflow': 'drop-head',
  },
});

/** Every queue declareTopology declares, with its arguments, in declaration order. */
export const queueDeclarations = (names: RmqNames, options: RmqTopologyOptions = {}): QueueDeclaration[] => {
  const queueType = options.queueType ?? 'classic';
  const deliveryLimit = options.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT;
  const general = { exchange: names.deadLetterExchange };
  return [
    { queue: names.deadLetterQueue, options: deadLetterQueueOptions(options), onChange: 'drop', loses: 'dead letters kept for inspection' },
    {
      queue: runsDeadLetterQueue(names),
      options: deadLetterQueueOptions(options),
      onChange: 'drop',
      loses: 'dead-lettered run steps the server had not read; their runs are left to the sweeper',
    },
    { queue: names.toolsQueue, options: workQueue(queueType, deliveryLimit, general), onChange: 'drop', loses: 'tool calls not yet run; their callers time out' },
    {
      // Always quorum, the only kind that counts deliveries: a step that crashes every worker taking it must stop after
      // runsDeliveryLimit redeliveries instead of looping. What it dead-letters (that step, or one a worker refused)
      // goes through the default exchange straight to the runs dead-letter queue, not to the general fanout: the
      // server consumes it. Dead-lettering is at most once (the quorum default): a step lost on the way leaves its
      // run to the sweeper, whose lease expiry catches it anyway.
      queue: names.runsQueue,
      options: workQueue('quorum', options.runsDeliveryLimit ?? DEFAULT_RUNS_DELIVERY_LIMIT, { exchange: '', routingKey: runsDeadLetterQueue(names) }),
      onChange: 'drop',
      loses: 'stale run steps; the server sweeper dispatches their runs again',
    },
    {
      queue: runEventsIngestQueue(names),
      options: workQueue(queueType, deliveryLimit, general, { 'x-single-active-consumer': true }),
      onChange: 'only-if-empty',
      loses: 'run events not yet stored',
    },
  ];
};

const withConnection = async <T>(url: string, work: (connection: ChannelModel) => Promise<T>): Promise<T> => {
  // The setup runs once against whichever node of the list answers: the cluster shares its definitions.
  const connection = await connectToAnyNode(url, { noDelay: true });
  // A refused declaration closes its channel with an error event; the rejected promise reports it instead.
  connection.on('error', () => undefined);
  try {
    return await work(connection);
  } finally {
    await connection.close().catch(() => undefined);
  }
};

/** One operation on a channel of its own: a refusal closes the channel it happened on, and no other. */
const onChannel = async <T>(connection: ChannelModel, operation: (channel: Channel) => Promise<T>): Promise<T> => {
  const channel = await connection.createChannel();
  channel.on('error', () => undefined);
  const result = await operation(channel);
  await channel.close().catch(() => undefined);
  return result;
};

const isPreconditionFailed = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === 406;

/** The broker's words: `inequivalent arg 'x-queue-type' for queue 'agent-runs' ...`. */
const brokerReason = (error: unknown): string => {
  const text = describeBrokerError(error);
  return /PRECONDITION_FAILED - (.*?)"?$/.exec(text)?.[1] ?? text;
};

/** Declares one queue; if it exists with other arguments, deletes it (as its declaration allows) and declares it again. */
const declareQueue = async (connection: ChannelModel, declaration: QueueDeclaration, log: RmqTopologyOptions['log']): Promise<QueueMigration | null> => {
  const { queue, options, onChange, loses } = declaration;
  const refused = await onChannel(connection, (channel) => channel.assertQueue(queue, options)).then(
    () => undefined,
    (error: unknown) => error ?? new Error('refused'),
  );
  if (refused === undefined) return null;
  if (!isPreconditionFailed(refused)) throw refused;
  let droppedMessages: number;
  try {
    ({ messageCount: droppedMessages } = await onChannel(connection, (channel) => channel.deleteQueue(queue, onChange === 'drop' ? {} : { ifEmpty: true })));
  } catch (error) {
    if (!isPreconditionFailed(error)) throw error;
    throw new Error(
      `Queue "${queue}" exists with other arguments (${brokerReason(refused)}) and still holds messages (${loses}): stop what publishes to it, let it drain, and run the setup again.`,
    );
  }
  await onChannel(connection, (channel) => channel.assertQueue(queue, options));
  log?.(`Queue "${queue}" existed with other arguments (${brokerReason(refused)}): deleted and declared again, ${droppedMessages} message(s) dropped (${loses}).`);
  return { queue, droppedMessages };
};

/**
 * Declares, once and with their arguments, everything the server and the worker use; consumers and clients then only
 * check (`noAssert: true`). Declaring again with the same options changes nothing. A queue an older release declared
 * with other arguments is deleted and declared again (see QueueDeclaration); resolves to those queues.
 */
export const declareTopology = (url: string, names: RmqNames, options: RmqTopologyOptions = {}): Promise<QueueMigration[]> =>
  withConnection(url, async (connection) => {
    const migrations: QueueMigration[] = [];
    const declarations = new Map(queueDeclarations(names, options).map((declaration) => [declaration.queue, declaration]));
    const declare = async (queue: string) => {
      const declaration = declarations.get(queue);
      if (!declaration) throw new Error(`No declaration for queue "${queue}".`);
      const migration = await declareQueue(connection, declaration, options.log);
      if (migration) migrations.push(migration);
    };
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    // Fanout: every refused, expired or over-delivered tool call or run event lands in the one dead-letter queue,
    // whatever its routing key.
    await channel.assertExchange(names.deadLetterExchange, 'fanout', { durable: true });
    await declare(names.deadLetterQueue);
    await channel.bindQueue(names.deadLetterQueue, names.deadLetterExchange, '');
    await declare(runsDeadLetterQueue(names));
    await declare(names.toolsQueue);
    await channel.assertExchange(names.toolsExchange, 'direct', { durable: true });
    await channel.bindQueue(names.toolsQueue, names.toolsExchange, names.toolsQueue);
    await declare(names.runsQueue);
    await channel.assertExchange(names.runEventsExchange, 'topic', { durable: true });
    await declare(runEventsIngestQueue(names));
    await channel.bindQueue(runEventsIngestQueue(names), names.runEventsExchange, '#');
    await channel.close().catch(() => undefined);
    return migrations;
  });

/** Removes what declareTopology made, messages included. For tests. */
export const deleteTopology = (url: string, names: RmqNames): Promise<void> =>
  withConnection(url, async (connection) => {
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    await channel.deleteQueue(names.toolsQueue);
    await channel.deleteQueue(names.runsQueue);
    await channel.deleteQueue(runEventsIngestQueue(names));
    await channel.deleteQueue(names.deadLetterQueue);
    await channel.deleteQueue(runsDeadLetterQueue(names));
    await channel.deleteExchange(names.deadLetterExchange);
    await channel.deleteExchange(names.runEventsExchange);
    await channel.deleteExchange(names.toolsExchange);
  });
