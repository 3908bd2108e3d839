import type { Channel, ChannelModel, ConsumeMessage } from 'amqplib';
import { RecoveringConnection, describeBrokerError, type RecoveringConnectionOptions } from './rmq-connection.js';

/** Ack, or nack without requeue: into the queue's dead-letter exchange, with the reason logged. */
export type MessageSettlement = { ack: true } | { ack: false; reason: string };

/**
 * One delivery's work, run once every earlier delivery of the same key is done with. It resolves to the message's
 * settlement, or to null to leave it unsettled (the broker redelivers it once the channel goes). The signal is aborted
 * when close() begins, so a work that would wait (a retry) can give up and leave its message for redelivery.
 */
export type OrderedWork = { key: string; run: (signal: AbortSignal) => Promise<MessageSettlement | null> };

export type OrderedConsumerOptions = Omit<RecoveringConnectionOptions, 'setup'> & {
  /** Consumed as declared by the topology; never asserted here, so a mismatch fails loudly instead of redeclaring. */
  queue: string;
  /** Messages in hand at once, across all keys. */
  prefetch: number;
  /** How long close() waits for the work in hand before closing the connection (which requeues what is left). */
  drainTimeoutMs: number;
  /** What one message is, in the log lines: `run event`. */
  noun: string;
  /** Reads one delivery: its settlement at once (a message refused unread), or its key and its work. */
  route: (message: ConsumeMessage) => MessageSettlement | OrderedWork;
};

/**
 * Consumes a queue with manual acks, keeping the order of each key: the messages of one key are handled one after
 * another, in delivery order, while other keys proceed in parallel (up to the prefetch). A message is settled only once
 * its work is done, so a crash or a lost connection mid-work leaves it to be redelivered. close() cancels the consumer,
 * lets the work in hand finish within drainTimeoutMs, then closes; what did not finish is redelivered.
 */
export class OrderedConsumer {
  private readonly connection: RecoveringConnection;
  private consumer: { channel: Channel; consumerTag: string } | null = null;
  private closing = new AbortController();
  /** The tail of each key's chain of messages. */
  private readonly tails = new Map<string, Promise<void>>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly options: OrderedConsumerOptions) {
    this.connection = new RecoveringConnection({ ...options, setup: (model) => this.startConsuming(model) });
  }

  /** Resolves once consuming, or fails (`Could not start <what>: <reason>`) after recovery's start-up attempts. */
  async start(): Promise<void> {
    if (this.closing.signal.aborted) this.closing = new AbortController();
    await this.connection.open();
  }

  async close(): Promise<void> {
    this.closing.abort();
    const consumer = this.consumer;
    this.consumer = null;
    if (consumer) await consumer.channel.cancel(consumer.consumerTag).catch(() => undefined);
    await this.drain();
    await this.connection.close();
  }

  private async drain(): Promise<void> {
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([
      Promise.allSettled([...this.inFlight]).then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), this.options.drainTimeoutMs))),
    ]);
    clearTimeout(timer);
    if (!done) {
      this.options.logger.warn(
        `${this.inFlight.size} ${this.options.noun}(s) still in hand after ${this.options.drainTimeoutMs} ms; closing leaves them for redelivery.`,
      );
    }
  }

  /** amqplib's recovery setup: runs after every (re)connection. */
  private async startConsuming(model: ChannelModel): Promise<void> {
    if (this.closing.signal.aborted) return;
    const channel = await model.createChannel();
    this.connection.supervise(model, channel, () => {
      if (this.consumer?.channel !== channel) return false;
      this.consumer = null;
      return !this.closing.signal.aborted;
    });
    await channel.prefetch(this.options.prefetch);
    const { consumerTag } = await channel.consume(
      this.options.queue,
      (message) => {
        if (message) this.receive(channel, message);
        // The broker cancels the consumer when the queue is deleted: restart, and let the setup report what is wrong.
        else channel.close().catch(() => undefined);
      },
      { noAck: false },
    );
    this.consumer = { channel, consumerTag };
  }

  private receive(channel: Channel, message: ConsumeMessage): void {
    let routed: MessageSettlement | OrderedWork;
    try {
      routed = this.options.route(message);
    } catch (error) {
      routed = { ack: false, reason: `reading it failed: ${describeBrokerError(error)}` };
    }
    if (!('key' in routed)) {
      this.settle(channel, message, routed);
      return;
    }
    const { key, run } = routed;
    const signal = this.closing.signal;
    const work = (this.tails.get(key) ?? Promise.resolve())
      .then(() => run(signal))
      .then((settlement) => {
        if (settlement) this.settle(channel, message, settlement);
      })
      .catch((error: unknown) => this.options.logger.error(`Handling a ${this.options.noun} of ${key} failed: ${describeBrokerError(error)}`));
    this.tails.set(key, work);
    this.inFlight.add(work);
    void work.finally(() => {
      this.inFlight.delete(work);
      if (this.tails.get(key) === work) this.tails.delete(key);
    });
  }

  private settle(channel: Channel, message: ConsumeMessage, settlement: MessageSettlement): void {
    try {
      if (settlement.ack) channel.ack(message);
      else {
        this.options.logger.warn(
          `Dead-lettering a ${this.options.noun} (routing key ${message.fields.routingKey.slice(0, 100)}): ${settlement.reason}.`,
        );
        channel.nack(message, false, false);
      }
    } catch (error) {
      // Only a closed channel refuses; the broker has requeued the message, and it will be redelivered.
      this.options.logger.warn(`Could not settle a ${this.options.noun}: ${describeBrokerError(error)}`);
    }
  }
}
