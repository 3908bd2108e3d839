import { randomUUID } from 'node:crypto';
import type { ChannelModel, ConfirmChannel, Options } from 'amqplib';
import { RecoveringConnection, describeBrokerError, type RecoveringConnectionOptions } from './rmq-connection.js';
import { endPublishSpan, startPublishSpan, withTraceHeaders } from './rmq-tracing.js';

/** How many times one publish is sent, at most, across recycled channels. */
export const MAX_SENDS = 20;
/** Without confirmTimeoutMs, how long after its first send a nacked publish is still sent again. */
export const RESEND_WINDOW_MS = 30_000;
/** The pause before the first resend; it doubles with each one, up to 32 times this. */
const RESEND_PAUSE_MS = 25;
/** How long a publish made while a recycled channel is being replaced waits for the new one. */
const RECYCLE_WAIT_MS = 5_000;

export type ConfirmPublisherOptions = Omit<RecoveringConnectionOptions, 'setup'> & {
  /** Runs on every new channel before it publishes: check, never assert, what it publishes to, so a mismatch fails loudly. */
  check: (channel: ConfirmChannel) => Promise<unknown>;
  /**
   * A publish not confirmed by then, resends included, rejects (the broker may still take the message). No limit on a
   * confirm's wait when omitted; resends after a nack then stop RESEND_WINDOW_MS after the first send.
   */
  confirmTimeoutMs?: number;
  /** How long a publish made while disconnected waits for amqplib to reconnect before it fails. 0 (the default): at once. */
  reconnectWaitMs?: number;
};

/**
 * closed: close() was called. disconnected: no channel (and none came within reconnectWaitMs). refused: the broker
 * nacked the message, or its channel closed before the confirm, on every send. unroutable: no queue took it.
 * timeout: no confirm in time.
 */
export type ConfirmPublishFailure = 'closed' | 'disconnected' | 'refused' | 'unroutable' | 'timeout';

export class ConfirmPublishError extends Error {
  override readonly name = 'ConfirmPublishError';
  constructor(
    readonly failure: ConfirmPublishFailure,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Publishes persistent messages on a confirm channel of a recovering connection; publish() resolves only once the
 * broker has confirmed it took the message. `mandatory` unless the caller says otherwise, so a message no queue takes
 * (returned by the broker before its confirm) rejects instead of vanishing. Nothing is buffered: while disconnected a
 * publish fails at once, or after reconnectWaitMs, rather than being kept in memory and sent, or lost, later (as
 * amqp-connection-manager does, reliability.md §2).
 */
export class ConfirmPublisher {
  private readonly connection: RecoveringConnection;
  private channel: ConfirmChannel | null = null;
  private closing = false;
  /** Message ids the broker returned as unroutable: a mandatory message comes back before its confirm. */
  private readonly returned = new Set<string>();
  /** Publishes waiting for a channel (reconnectWaitMs): handed the next one, or null when the publisher closes. */
  private readonly waiting = new Set<(channel: ConfirmChannel | null) => void>();
  /** The connection the recovery's last setup ran on: where a recycled channel is replaced. */
  private model: ChannelModel | null = null;
  private recycled = 0;
  private recycling = false;

  constructor(private readonly options: ConfirmPublisherOptions) {
    this.connection = new RecoveringConnection({ ...options, setup: (model) => this.openChannel(model) });
  }

  /** Resolves on the first connection, or fails (`Could not start <what>: <reason>`) after recovery's start-up attempts. */
  async start(): Promise<void> {
    this.closing = false;
    await this.connection.open();
  }

  async close(): Promise<void> {
    this.closing = true;
    this.channel = null;
    for (const wake of this.waiting) wake(null);
    await this.connection.close();
  }

  /**
   * Resolves once the broker has confirmed the message; rejects with a ConfirmPublishError, never with anything else.
   * A nack, or a channel that closes before the confirm, does not fail the publish at once: the message is sent again,
   * with the same message id, on a fresh channel (see recycle), until confirmTimeoutMs from the first send is over (or
   * RESEND_WINDOW_MS when there is none) or MAX_SENDS sends were made. So whatever consumes it must take a message id
   * twice as once (run steps and run event batches do).
   */
  async publish(exchange: string, routingKey: string, content: Buffer, properties: Options.Publish = {}): Promise<void> {
    const span = startPublishSpan(exchange, routingKey, { messageId: properties.messageId, correlationId: properties.correlationId, bodySize: content.length });
    if (!span) return this.publishConfirmed(exchange, routingKey, content, properties);
    try {
      // The traceparent goes in the headers, beside the body a signature covers, never into it.
      await this.publishConfirmed(exchange, routingKey, content, { ...properties, headers: withTraceHeaders(properties.headers, span) });
      endPublishSpan(span);
    } catch (error) {
      endPublishSpan(span, error);
      throw error;
    }
  }

  private async publishConfirmed(exchange: string, routingKey: string, content: Buffer, properties: Options.Publish): Promise<void> {
    const messageId = properties.messageId ?? randomUUID();
    const { confirmTimeoutMs } = this.options;
    const deadline = Date.now() + (confirmTimeoutMs ?? RESEND_WINDOW_MS);
    // While a recycled channel is being replaced (milliseconds), a new publish waits for the new one instead of failing.
    const firstWait = Math.max(this.options.reconnectWaitMs ?? 0, this.recycling ? Math.min(RECYCLE_WAIT_MS, deadline - Date.now()) : 0);
    let channel = this.channel ?? (await this.nextChannel(firstWait));
    for (let sends = 1; ; sends += 1) {
      const remaining = confirmTimeoutMs === undefined ? undefined : deadline - Date.now();
      const failure = await this.sendOnce(channel, exchange, routingKey, content, { ...properties, messageId }, remaining);
      if (!failure) return;
      if (failure.failure !== 'refused') throw failure;
      this.recycle(channel);
      const left = deadline - Date.now();
      if (sends >= MAX_SENDS || left <= 0) throw failure;
      // A short, growing pause: a queue refusing publishes (full, or electing a leader) gets time to recover.
      await new Promise((resolve) => setTimeout(resolve, Math.min(left, RESEND_PAUSE_MS * 2 ** Math.min(sends - 1, 5))));
      // No new channel before the deadline: the publish failed because it was refused, which is what it reports.
      channel =
        this.channel ??
        (await this.nextChannel(Math.max(this.options.reconnectWaitMs ?? 0, deadline - Date.now())).catch((error: ConfirmPublishError) => {
          throw error.failure === 'closed' ? error : failure;
        }));
    }
  }

  /** One send on one channel: undefined once confirmed, else why not. */
  private sendOnce(
    channel: ConfirmChannel,
    exchange: string,
    routingKey: string,
    content: Buffer,
    properties: Options.Publish & { messageId: string },
    timeoutMs: number | undefined,
  ): Promise<ConfirmPublishError | undefined> {
    const { messageId } = properties;
    return new Promise((resolve) => {
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => resolve(new ConfirmPublishError('timeout', `no confirm within ${this.options.confirmTimeoutMs} ms`)), Math.max(0, timeoutMs));
      const settle = (error: unknown) => {
        clearTimeout(timer);
        const wasReturned = this.returned.delete(messageId);
        if (error) resolve(new ConfirmPublishError('refused', describeBrokerError(error)));
        else if (wasReturned) {
          const where = exchange ? `"${exchange}"` : 'the default exchange';
          resolve(new ConfirmPublishError('unroutable', `no queue is bound to ${where} under "${routingKey}"`));
        } else resolve(undefined);
      };
      try {
        channel.publish(exchange, routingKey, content, { mandatory: true, ...properties, persistent: true }, settle);
      } catch (error) {
        // A channel already closed throws here (amqplib invalidates send): sent again on the next one.
        settle(error);
      }
    });
  }

  /**
   * Replaces a channel that nacked (or closed) with a fresh one on the same connection. A confirm channel opened while
   * a quorum queue elects its leader can nack every publish until the lost node returns (25-38 s measured, RabbitMQ
   * 3.10.8, FINDINGS.md); a new channel opened a moment later confirms at once. Only the live channel is recycled, once:
   * the publishes that were waiting on it are sent again on the new one.
   */
  private recycle(channel: ConfirmChannel): void {
    if (this.channel !== channel || this.closing) return;
    this.channel = null;
    this.recycled += 1;
    channel.close().catch(() => undefined);
    const model = this.model;
    if (!model) return;
    this.recycling = true;
    this.openChannel(model)
      .catch((error: unknown) => {
        // The connection itself is failing: closing it hands the reopening, with its backoff, to amqplib's recovery.
        this.options.logger.warn(`Reopening a confirm channel (${this.options.what}) failed: ${describeBrokerError(error)}`);
        model.close().catch(() => undefined);
      })
      .finally(() => {
        this.recycling = false;
      });
  }

  /** How many channels were replaced after a nack or a close: for tests and metrics. */
  get recycledChannels(): number {
    return this.recycled;
  }

  private nextChannel(waitMs: number): Promise<ConfirmChannel> {
    if (this.closing) return Promise.reject(new ConfirmPublishError('closed', 'the publisher is closed'));
    const notConnected = () => {
      const reason = this.connection.lastError ? `: ${describeBrokerError(this.connection.lastError)}` : '';
      return new ConfirmPublishError('disconnected', `not connected to RabbitMQ${reason}`);
    };
    if (waitMs <= 0) return Promise.reject(notConnected());
    return new Promise<ConfirmChannel>((resolve, reject) => {
      const wake = (channel: ConfirmChannel | null) => {
        clearTimeout(timer);
        this.waiting.delete(wake);
        if (channel) resolve(channel);
        else reject(new ConfirmPublishError('closed', 'the publisher is closed'));
      };
      const timer = setTimeout(() => {
        this.waiting.delete(wake);
        reject(notConnected());
      }, waitMs);
      this.waiting.add(wake);
    });
  }

  /** amqplib's recovery setup: runs after every (re)connection. */
  private async openChannel(model: ChannelModel): Promise<void> {
    if (this.closing) return;
    this.model = model;
    const channel = await model.createConfirmChannel();
    this.connection.supervise(model, channel, () => {
      if (this.channel === channel) this.channel = null;
      return !this.closing;
    });
    channel.on('return', (message: { properties: { messageId?: unknown } }) => {
      if (typeof message.properties.messageId === 'string') this.returned.add(message.properties.messageId);
    });
    await this.options.check(channel);
    this.channel = channel;
    for (const wake of this.waiting) wake(channel);
  }
}
