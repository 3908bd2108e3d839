import { randomUUID } from 'node:crypto';
import type { ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import { RecoveringConnection, type BrokerLogger } from './rmq-connection.js';
import { DIRECT_REPLY_TO } from './rmq-names.js';
import type { RmqIncomingPacket, RmqReplyPacket } from './rmq-packet.js';
import { endPublishSpan, startPublishSpan, withTraceHeaders } from './rmq-tracing.js';

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

/** A call waiting for its reply, and the channel whose direct reply-to address that reply comes to. */
type PendingCall = {
  resolve: (response: unknown) => void;
  reject: (error: RmqRpcError) => void;
  timer: NodeJS.Timeout;
  channel: ConfirmChannel;
  sends: number;
  timeoutMs: number;
  /** traceparent of the call's producer span, sent with every send of it; undefined with tracing off. */
  headers?: Record<string, unknown>;
};

/** How many times one call is published, at most, when the broker nacks it. */
const MAX_SENDS = 10;
/** The pause before a nacked call is published again; it doubles with each send, up to 32 times this. */
const RESEND_PAUSE_MS = 25;

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
 *
 * The channel is a confirm channel, so a call the broker refuses (a nack: a quorum queue electing its leader, or full)
 * is known at once instead of waiting out its timeout: the channel is replaced by a fresh one (a channel opened
 * mid-election can be nacked until the lost node returns, FINDINGS.md) and the call published again on it, same
 * correlation id, within its timeout. The replaced channel stays open until the calls whose replies it awaits settle.
 * The replies themselves go to direct reply-to, which takes no confirm.
 */
export class RmqRpcClient {
  private readonly connection: RecoveringConnection;
  private channel: ConfirmChannel | null = null;
  private closing = false;
  private readonly pending = new Map<string, PendingCall>();
  /** The connection the recovery's last setup ran on: where a nacked channel's replacement is opened. */
  private model: ChannelModel | null = null;
  /** Replaced channels still awaiting replies: closed once their last call settles. */
  private readonly retiring = new Set<ConfirmChannel>();
  /** Calls nacked while the replacement channel opens: published again on it. */
  private readonly toResend = new Map<string, { body: Buffer; deadline: number }>();
  private replaced = 0;
  /** Callers of whenConnected() waiting for a channel: woken with true when one opens, false when the client closes. */
  private readonly connectionWaiters = new Set<(connected: boolean) => void>();

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

  /** Whether a call could be published now: connected, with its channel open (a readiness check reads it). */
  get connected(): boolean {
    return this.channel !== null;
  }

  /**
   * Resolves once a call could be published (at once when connected) with true, or with false when `timeoutMs` passes
   * or the client closes first. For a caller that sends a lost call again once the connection is back.
   */
  whenConnected(timeoutMs: number): Promise<boolean> {
    if (this.channel) return Promise.resolve(true);
    if (this.closing || timeoutMs <= 0) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const settle = (connected: boolean) => {
        clearTimeout(timer);
        this.connectionWaiters.delete(settle);
        resolve(connected);
      };
      const timer = setTimeout(() => settle(false), timeoutMs);
      this.connectionWaiters.add(settle);
    });
  }

  /**
   * Resolves with the server's `response`; rejects with an RmqRpcError, never with anything else. `correlationId`
   * (random by default) lets a caller that sends one request again after a failure give every send the same one, so a
   * reply to an earlier send still settles the later one; two calls waiting at once must not share it.
   */
  call(pattern: string, data: unknown, timeoutMs: number, options: { correlationId?: string } = {}): Promise<unknown> {
    const channel = this.channel;
    if (!channel) return Promise.reject(new RmqRpcError('unreachable', 'not connected to RabbitMQ'));
    const id = options.correlationId ?? randomUUID();
    if (this.pending.has(id)) return Promise.reject(new RmqRpcError('unreachable', 'a call with this correlation id is already waiting'));
    const deadline = Date.now() + timeoutMs;
    const body = Buffer.from(JSON.stringify({ pattern, data, id } satisfies RmqIncomingPacket));
    // One producer span per call, from the publish to its reply: the hop as the caller lives it.
    const span = startPublishSpan(this.options.exchange, this.options.routingKey, { correlationId: id, bodySize: body.length });
    const headers = withTraceHeaders(undefined, span);
    const reply = new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => this.finish(id)?.reject(new RmqRpcError('timeout', `no reply within ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, { resolve, reject, timer, channel, sends: 0, timeoutMs, headers });
      this.send(id, body, deadline);
    });
    if (!span) return reply;
    return reply.then(
      (response) => {
        endPublishSpan(span);
        return response;
      },
      (error: unknown) => {
        endPublishSpan(span, error);
        throw error;
      },
    );
  }

  /** How many channels were replaced after a nack: for tests and metrics. */
  get replacedChannels(): number {
    return this.replaced;
  }

  /** Publishes a waiting call on the current channel; a nack replaces the channel and publishes it again there. */
  private send(id: string, body: Buffer, deadline: number): void {
    const call = this.pending.get(id);
    const channel = this.channel;
    if (!call) return;
    if (!channel) {
      this.toResend.set(id, { body, deadline });
      return;
    }
    call.channel = channel;
    call.sends += 1;
    try {
      channel.publish(
        this.options.exchange,
        this.options.routingKey,
        body,
        {
          replyTo: DIRECT_REPLY_TO,
          correlationId: id,
          // A call nobody consumed in time is dropped by the broker, so a server that comes back later cannot run it
          // after its caller gave up. Whole milliseconds: the broker closes the channel on a fractional expiration.
          expiration: String(Math.max(1, Math.ceil(call.sends === 1 ? call.timeoutMs : deadline - Date.now()))),
          contentType: 'application/json',
          // Not persistent: a call outliving a broker restart would run after its caller gave up.
          persistent: false,
          mandatory: true,
          ...(this.options.userId === undefined ? {} : { userId: this.options.userId }),
          // Beside the envelope, never in it: the server reads it only to parent its spans.
          ...(call.headers ? { headers: call.headers } : {}),
        },
        (error: unknown) => {
          // Confirmed (or returned, which the 'return' listener has settled): the reply is awaited on this channel.
          if (!error || !this.pending.has(id) || this.pending.get(id)?.channel !== channel) return;
          // A channel that closed fails its calls itself (onChannelClosed); only a nack is sent again.
          if (!/nack/i.test(describe(error))) return;
          if (call.sends >= MAX_SENDS) {
            this.finish(id)?.reject(new RmqRpcError('unreachable', `the broker refused the call ${call.sends} times`));
            return;
          }
          this.replaceChannel(channel);
          // A short, growing pause: a queue refusing publishes (full, or electing a leader) gets time to recover.
          setTimeout(() => this.send(id, body, deadline), RESEND_PAUSE_MS * 2 ** Math.min(call.sends - 1, 5));
        },
      );
    } catch (error) {
      this.finish(id)?.reject(new RmqRpcError('unreachable', `the call could not be published: ${describe(error)}`));
    }
  }

  /**
   * Swaps a nacked channel for a fresh one on the same connection, once per channel. The old one keeps receiving the
   * replies of the calls it carried and is closed when the last of them settles.
   */
  private replaceChannel(channel: ConfirmChannel): void {
    if (this.channel !== channel || this.closing) return;
    this.channel = null;
    this.replaced += 1;
    this.retiring.add(channel);
    this.closeIfIdle(channel);
    const model = this.model;
    if (!model) return;
    this.openChannel(model).catch((error: unknown) => {
      // The connection is failing: closing it hands the reopening, with its backoff, to amqplib's recovery.
      this.options.logger?.warn(`Replacing a nacked channel (calling through "${this.options.exchange}") failed: ${describe(error)}`);
      model.close().catch(() => undefined);
    });
  }

  private closeIfIdle(channel: ConfirmChannel): void {
    if (!this.retiring.has(channel)) return;
    for (const call of this.pending.values()) if (call.channel === channel) return;
    this.retiring.delete(channel);
    channel.close().catch(() => undefined);
  }

  /** Fails the calls still waiting, then closes the connection. */
  async close(): Promise<void> {
    this.closing = true;
    this.failAll('the client closed');
    for (const settle of [...this.connectionWaiters]) settle(false);
    this.channel = null;
    await this.connection.close();
  }

  /** amqplib's recovery setup: runs after every (re)connection. */
  private async openChannel(model: ChannelModel): Promise<void> {
    if (this.closing) return;
    this.model = model;
    const channel = await this.createChannel(model);
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
    for (const settle of [...this.connectionWaiters]) settle(true);
    // The calls nacked while this channel opened.
    for (const [id, { body, deadline }] of [...this.toResend]) {
      this.toResend.delete(id);
      this.send(id, body, deadline);
    }
  }

  /** The channel that publishes calls and receives their replies. A seam for tests that make a channel nack. */
  protected createChannel(model: ChannelModel): Promise<ConfirmChannel> {
    return model.createConfirmChannel();
  }

  /** Whether the connection restarts: the publishing channel closed while the client is not closing. */
  private onChannelClosed(channel: ConfirmChannel): boolean {
    // Its direct reply-to address is gone: the calls awaiting replies there can get none.
    for (const [id, call] of [...this.pending]) {
      if (call.channel === channel) this.finish(id)?.reject(new RmqRpcError('unreachable', 'the channel to RabbitMQ closed'));
    }
    this.retiring.delete(channel);
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
    this.toResend.delete(id);
    clearTimeout(call.timer);
    this.closeIfIdle(call.channel);
    return call;
  }

  private failAll(reason: string): void {
    for (const id of [...this.pending.keys()]) this.finish(id)?.reject(new RmqRpcError('unreachable', reason));
  }
}
