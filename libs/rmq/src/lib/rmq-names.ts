/** Queue and exchange names shared by the server, the worker and the topology setup. Tests pass their own suffixed names. */
export type RmqNames = {
  /** Tool calls from the worker to the server (RPC, direct reply-to). */
  toolsQueue: string;
  /**
   * The only way into the tools queue for the worker: a direct exchange bound to it under the queue's name. The worker
   * may write here and not to the default exchange, through which replies travel (see brokerPermissions).
   */
  toolsExchange: string;
  /** Runs from the server to the worker. */
  runsQueue: string;
  /** Run events from the worker to the server, routed by run id. */
  runEventsExchange: string;
  /**
   * Where refused, malformed and expired tool calls and run events go (a fanout exchange into deadLetterQueue). Run
   * steps have a dead-letter queue of their own, which the server consumes: see runsDeadLetterQueue.
   */
  deadLetterExchange: string;
  deadLetterQueue: string;
};

/** RabbitMQ's direct reply-to pseudo-queue: callers read replies here, with no reply queue to declare or leak. */
export const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';

/**
 * Whether a message's replyTo is a direct reply-to address, as the broker rewrites it for a caller consuming
 * DIRECT_REPLY_TO (`amq.rabbitmq.reply-to.<token>`). Replies travel through the default exchange, which routes to any
 * queue by name: answering any other replyTo would let a caller make the server publish, as itself, into a queue of its
 * choosing (the runs queue, the run events ingest), which its own broker permissions forbid it.
 */
export const isDirectReplyTo = (replyTo: unknown): replyTo is string =>
  typeof replyTo === 'string' && replyTo.startsWith(`${DIRECT_REPLY_TO}.`) && replyTo.length > DIRECT_REPLY_TO.length + 1;

export const rmqNames = (toolsQueue = 'agent-tools', runsQueue = 'agent-runs'): RmqNames => ({
  toolsQueue,
  toolsExchange: `${toolsQueue}.calls`,
  runsQueue,
  runEventsExchange: `${runsQueue}.events`,
  deadLetterExchange: `${toolsQueue}.dlx`,
  deadLetterQueue: `${toolsQueue}.dead-letter`,
});

/**
 * The server's queue of run events: bound to the run events exchange with `#`, consumed by every server instance with a
 * single active consumer (publish order is the only order a run's events have). A function rather than a field of
 * RmqNames, which the worker never needs.
 */
export const runEventsIngestQueue = (names: RmqNames): string => `${names.runEventsExchange}.ingest`;

/**
 * Where the runs queue dead-letters a step that was refused or delivered more often than its delivery limit (routed
 * through the default exchange under this name). The server consumes it and fails the step's run, so it is kept apart
 * from the general dead-letter queue, which no one consumes. A function rather than a field of RmqNames, which the
 * worker never needs.
 */
export const runsDeadLetterQueue = (names: RmqNames): string => `${names.runsQueue}.dead-letter`;
