import { randomUUID } from 'node:crypto';
import type { ChannelModel, ConfirmChannel, Options } from 'amqplib';
import { RecoveringConnection, describeBrokerError, type RecoveringConnectionOptions } from './rmq-connection.js';

export type ConfirmPublisherOptions = Omit<RecoveringConnectionOptions, 'setup'> & {
  /** Runs on every new channel before it publishes: check, never assert, what it publishes to, so a mismatch fails loudly. */
  check: (channel: ConfirmChannel) => Promise<unknown>;
  /** A confirm that has not come by then rejects the publish (the broker may still take the message). No limit when omitted. */
  confirmTimeoutMs?: number;
  /** How long a publish made while disconnected waits for amqplib to reconnect before it fails. 0 (the default): at once. */
  reconnectWaitMs?: number;
};

/**
 * closed: close() was called. disconnected: no channel (and none came within reconnectWaitMs). refused: the broker
 * nacked the message, or its channel closed before the confirm. unroutable: no queue took it. timeout: no confirm in time.
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

  /** Resolves once the broker has confirmed the message; rejects with a ConfirmPublishError, never with anything else. */
  async publish(exchange: string, routingKey: string, content: Buffer, properties: Options.Publish = {}): Promise<void> {
    const channel = this.channel ?? (await this.nextChannel());
    const messageId = properties.messageId ?? randomUUID();
    const { confirmTimeoutMs } = this.options;
    await new Promise<void>((resolve, reject) => {
      const timer =
        confirmTimeoutMs === undefined
          ? undefined
          : setTimeout(() => reject(new ConfirmPublishError('timeout', `no confirm within ${confirmTimeoutMs} ms`)), confirmTimeoutMs);
      const settle = (error: unknown) => {
        clearTimeout(timer);
        const wasReturned = this.returned.delete(messageId);
        if (error) {
          // The channel is left as it is: recycling a channel after a nack belongs here.
          reject(new ConfirmPublishError('refused', describeBrokerError(error)));
        } else if (wasReturned) {
          const where = exchange ? `"${exchange}"` : 'the default exchange';
          reject(new ConfirmPublishError('unroutable', `no queue is bound to ${where} under "${routingKey}"`));
        } else resolve();
      };
      try {
        channel.publish(exchange, routingKey, content, { mandatory: true, ...properties, messageId, persistent: true }, settle);
      } catch (error) {
        settle(error);
      }
    });
  }

  private nextChannel(): Promise<ConfirmChannel> {
    const waitMs = this.options.reconnectWaitMs ?? 0;
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
