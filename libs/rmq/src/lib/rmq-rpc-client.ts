import { randomUUID } from 'node:crypto';
import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { RecoveringConnection, type BrokerLogger } from './rmq-connection.js';
import { DIRECT_REPLY_TO } from './rmq-names.js';
import type { RmqIncomingPacket, RmqReplyPacket } from './rmq-packet.js';

export type RmqRpcClientOptions = {
  /** amqp://user:password@host:port/vhost, or several nodes of one cluster separated by commas (see BrokerNodes). */
  url: string;
  /** Which node of the list the first attempt goes to; random by default. For tests. */
  firstNode?: number;
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
  logger?: BrokerLogger;
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
const SILENT: BrokerLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

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
  private readonly connection: RecoveringConnection;
  private channel: Channel | null = null;
  private closing = false;
  private readonly pending = new Map<string, PendingCall>();

  constructor(private readonly options: RmqRpcClientOptions) {
    const { url, connectionName, reconnect, exchange, firstNode } = options;
    this.connection = new RecoveringConnection({
      url,
      firstNode,
      connectionName,
      what: `calling through "${exchange}"`,
      logger: options.logger ?? SILENT,
      recovery: { initialDelay: reconnect?.initialDelayMs ?? 100, maxDelay: reconnect?.maxDelayMs ?? 5_000 },
      setup: (model) => this.openChannel(model),
    });
    // A direct reply-to address dies with its channel: no answer can arrive for a call in flight.
    this.connection.on('disconnect', () => {
      this.channel = null;
      this.failAll('the connection to RabbitMQ was lost');
    });
  }

  /** Connects, or fails within timeoutMs with the broker's last reason; afterwards reconnection is automatic. */
  async connect(timeoutMs: number): Promise<void> {
    this.closing = false;
    await this.connection.open(timeoutMs);
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
          // after its caller gave up. Whole milliseconds: the broker closes the channel on a fractional expiration.
          expiration: String(Math.max(1, Math.ceil(timeoutMs))),
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
    this.channel = null;
    await this.connection.close();
  }

  /** amqplib's recovery setup: runs after every (re)connection. */
  private async openChannel(model: ChannelModel): Promise<void> {
    if (this.closing) return;
    const channel = await model.createChannel();
    this.connection.supervise(model, channel, () => this.onChannelClosed(channel));
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

  /** Whether the connection restarts: the publishing channel closed while the client is not closing. */
  private onChannelClosed(channel: Channel): boolean {
    if (this.channel !== channel) return false;
    this.channel = null;
    this.failAll('the channel to RabbitMQ closed');
    return !this.closing;
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
