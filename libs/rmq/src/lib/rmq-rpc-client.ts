import { randomUUID } from 'node:crypto';
import type { LoggerService } from '@nestjs/common';
import type { Channel, ChannelModel, ConsumeMessage, RecoveringChannelModel } from 'amqplib';
import { connectRecovering } from './rmq-connection.js';
import { DIRECT_REPLY_TO } from './rmq-names.js';
import type { RmqIncomingPacket, RmqReplyPacket } from './rmq-packet.js';

export type RmqRpcClientOptions = {
  /** amqp://user:password@host:port/vhost */
  url: string;
  /** Declared by the setup and checked at every (re)connection, never asserted: the caller's user may declare nothing. */
  exchange: string;
  routingKey: string;
  /**
   * Set as `user_id` on every call, so the server can tell who published it. RabbitMQ refuses one that is not the
   * connection's user (406, channel closed), so it comes from configuration, never from a caller.
   */
  userId?: string;
  /** Shown by `rabbitmqctl list_connections client_properties`. */
  connectionName?: string;
  /** Reconnect backoff (defaults 100 ms doubling to 5 s). Reconnection never gives up once started. */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number };
  logger?: Pick<LoggerService, 'log' | 'warn'>;
};

/** Why a call got no answer: it timed out, or there was no connection, or the server answered with an error. */
export type RmqRpcFailure = 'timeout' | 'unreachable' | 'error-reply';

export class RmqRpcError extends Error {
  override readonly name = 'RmqRpcError';
  constructor(
    readonly failure: RmqRpcFailure,
    message: string,
  ) {
    super(message);
  }
}

type PendingCall = { resolve: (response: unknown) => void; reject: (error: RmqRpcError) => void; timer: NodeJS.Timeout };

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Request and reply over RabbitMQ on plain amqplib, for the Nest packet format AckAfterReplyTransport serves
 * (`{ pattern, data, id }` out, `{ id, response | err, isDisposed }` back): direct reply-to on the publishing channel,
 * TCP_NODELAY, a message expiration equal to the call's timeout, `user_id`, a correlation id per call.
 *
 * Unlike Nest's ClientRMQ it publishes to a named exchange without declaring it (a user who may not configure cannot
 * assert anything) and never buffers: a call made while disconnected, or in flight when the connection or channel is
 * lost, fails at once, because a direct reply-to address dies with its channel and no answer can arrive any more.
 * A call no queue can take (mandatory, returned by the broker) fails at once too.
 */
export class RmqRpcClient {
  private connection: RecoveringChannelModel | null = null;
  private channel: Channel | null = null;
  private closing = false;
  private lastConnectError: Error | undefined;
  private readonly pending = new Map<string, PendingCall>();

  constructor(private readonly options: RmqRpcClientOptions) {}

  /** Connects, or fails within timeoutMs with the broker's last reason; afterwards reconnection is automatic. */
  async connect(timeoutMs: number): Promise<void> {
    if (this.connection) return;
    this.closing = false;
    const { url, connectionName, reconnect } = this.options;
    const connection = await connectRecovering(url, {
      connectionName,
      recovery: { initialDelay: reconnect?.initialDelayMs ?? 100, maxDelay: reconnect?.maxDelayMs ?? 5_000 },
      setup: (model) => this.openChannel(model),
    });
    this.connection = connection;
    this.watch(connection);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const reason = this.lastConnectError ? `: ${this.lastConnectError.message}` : '';
        reject(new Error(`no connection within ${timeoutMs} ms${reason}`));
      }, timeoutMs);
    });
    try {
      await Promise.race([connection.waitForConnect(), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Resolves with the server's `response`; rejects with an RmqRpcError, never with anything else. */
  call(pattern: string, data: unknown, timeoutMs: number): Promise<unknown> {
    const channel = this.channel;
    if (!channel) return Promise.reject(new RmqRpcError('unreachable', 'not connected to RabbitMQ'));
    const id = randomUUID();
    return new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => this.finish(id)?.reject(new RmqRpcError('timeout', `no reply within ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      try {
        const packet: RmqIncomingPacket = { pattern, data, id };
        channel.publish(this.options.exchange, this.options.routingKey, Buffer.from(JSON.stringify(packet)), {
          replyTo: DIRECT_REPLY_TO,
          correlationId: id,
          // A call nobody consumed in time is dropped by the broker, so a server that comes back later cannot run it
          // after its caller gave up.
          expiration: String(timeoutMs),
          contentType: 'application/json',
          // Not persistent: a call outliving a broker restart would run after its caller gave up.
          persistent: false,
          mandatory: true,
          ...(this.options.userId === undefined ? {} : { userId: this.options.userId }),
        });
      } catch (error) {
        this.finish(id)?.reject(new RmqRpcError('unreachable', `the call could not be published: ${describe(error)}`));
      }
    });
  }

  /** Fails the calls still waiting, then closes the connection. */
  async close(): Promise<void> {
    this.closing = true;
    this.failAll('the client closed');
    const connection = this.connection;
    this.connection = null;
    this.channel = null;
    await connection?.close().catch(() => undefined);
  }

  /** amqplib's recovery setup: runs after every (re)connection. */
  private async openChannel(model: ChannelModel): Promise<void> {
    if (this.closing) return;
    const channel = await model.createChannel();
    // Without an 'error' listener a channel error crashes the process (amqp-node/amqplib#649).
    channel.on('error', (error: Error) => this.options.logger?.warn(`RabbitMQ channel error (${this.options.exchange}): ${error.message}`));
    channel.on('close', () => this.onChannelClosed(model, channel));
    channel.on('return', (message: ConsumeMessage) =>
      this.finish(String(message.properties.correlationId))?.reject(
        new RmqRpcError('unreachable', `no queue is bound to "${this.options.exchange}" under "${this.options.routingKey}"`),
      ),
    );
    await channel.checkExchange(this.options.exchange);
    // Direct reply-to: the consumer must exist, on the channel that publishes, before the first call.
    await channel.consume(DIRECT_REPLY_TO, (message) => message && this.receive(message), { noAck: true });
    this.channel = channel;
  }

  private watch(connection: RecoveringChannelModel): void {
    const { logger, exchange } = this.options;
    connection.on('error', (error: Error) => logger?.warn(`RabbitMQ connection error (${exchange}): ${error.message}`));
    connection.on('connect-failed', (error: Error) => {
      this.lastConnectError = error;
    });
    connection.on('connect', () => logger?.log(`Connected to RabbitMQ (${exchange}).`));
    connection.on('disconnect', (error: Error) => {
      this.channel = null;
      this.failAll('the connection to RabbitMQ was lost');
      logger?.warn(`Disconnected from RabbitMQ (${exchange}): ${error.message}. Reconnecting.`);
    });
  }

  private onChannelClosed(model: ChannelModel, channel: Channel): void {
    if (this.channel !== channel) return;
    this.channel = null;
    this.failAll('the channel to RabbitMQ closed');
    // Closing the connection hands the restart, with its backoff, to amqplib's recovery.
    if (!this.closing) model.close().catch(() => undefined);
  }

  private receive(message: ConsumeMessage): void {
    // A reply to a call that already timed out has nobody waiting: dropped.
    const call = this.finish(String(message.properties.correlationId));
    if (!call) return;
    let reply: unknown;
    try {
      reply = JSON.parse(message.content.toString('utf8'));
    } catch {
      call.reject(new RmqRpcError('error-reply', 'the reply is not JSON'));
      return;
    }
    if (typeof reply !== 'object' || reply === null) {
      call.reject(new RmqRpcError('error-reply', 'the reply is not a reply packet'));
      return;
    }
    const packet = reply as Partial<RmqReplyPacket>;
    if (packet.err !== undefined && packet.err !== null) call.reject(new RmqRpcError('error-reply', `the server answered with an error: ${JSON.stringify(packet.err)}`));
    else call.resolve(packet.response);
  }

  /** Takes a waiting call out, once: whichever of reply, timeout, return or loss comes first settles it. */
  private finish(id: string): PendingCall | undefined {
    const call = this.pending.get(id);
    if (!call) return undefined;
    this.pending.delete(id);
    clearTimeout(call.timer);
    return call;
  }

  private failAll(reason: string): void {
    for (const id of [...this.pending.keys()]) this.finish(id)?.reject(new RmqRpcError('unreachable', reason));
  }
}
