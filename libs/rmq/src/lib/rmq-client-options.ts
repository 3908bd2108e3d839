import type { RmqOptions } from '@nestjs/microservices';

export const DIRECT_REPLY_TO = 'amq.rabbitmq.reply-to';

export type RmqClientOptions = NonNullable<RmqOptions['options']>;

export type RmqClientOptionsInput = {
  url: string;
  /** The queue the calls go to, declared by `declareTopology`. */
  queue: string;
  heartbeatIntervalInSeconds?: number;
  reconnectTimeInSeconds?: number;
  /** Shown by `rabbitmqctl list_connections client_properties`. */
  connectionName?: string;
};

/**
 * Options for a Nest `ClientRMQ` calling a queue served by AckAfterReplyTransport.
 *
 * - `noAssert`: the topology step owns the queue's arguments; a client asserting it differently would be refused (406).
 * - Direct reply-to: no reply queue to declare or leak. It is at-most-once (a reply to a caller that has gone is
 *   dropped), which is why every call carries an `expiration` and the server checks its deadline.
 * - `noAck` is deliberately absent: on the client it applies to the reply consumer, and `noAck: false` there fails
 *   with "reply consumer cannot acknowledge" (nestjs/nest#11966). Never share the server's options with the client.
 * - Not persistent: a call outliving a broker restart would run after its caller gave up.
 */
export const rmqClientOptions = (input: RmqClientOptionsInput): RmqClientOptions => ({
  urls: [input.url],
  queue: input.queue,
  noAssert: true,
  replyQueue: DIRECT_REPLY_TO,
  persistent: false,
  socketOptions: {
    connectionOptions: {
      noDelay: true,
      ...(input.connectionName === undefined ? {} : { clientProperties: { connection_name: input.connectionName } }),
    },
    ...(input.heartbeatIntervalInSeconds === undefined ? {} : { heartbeatIntervalInSeconds: input.heartbeatIntervalInSeconds }),
    ...(input.reconnectTimeInSeconds === undefined ? {} : { reconnectTimeInSeconds: input.reconnectTimeInSeconds }),
  },
});
