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

/** A delivery handled with the key's other queued deliveries by the consumer's `together` handler. */
export type OrderedItem<T> = { key: string; item: T };

/**
 * How a key's queued items are handled together: `run` gets up to `max` of them, in delivery order, and resolves to one
 * settlement (or null) per item, in the same order, so each delivery is settled by its own outcome.
 */
export type TogetherHandler<T> = {
  max: number;
  run: (key: string, items: readonly T[], signal: AbortSignal) => Promise<readonly (MessageSettlement | null)[]>;
};

export type OrderedConsumerOptions<T = never> = Omit<RecoveringConnectionOptions, 'setup'> & {
  /** Consumed as declared by the topology; never asserted here, so a mismatch fails loudly instead of redeclaring. */
  queue: string;
  /** Messages in hand at once, across all keys. */
  prefetch: number;
  /** Keys worked on at once (default: no bound beyond the prefetch); a key waiting for its turn gathers its deliveries. */
  parallel?: number;
  /** How long close() waits for the work in hand before closing the connection (which requeues what is left). */
  drainTimeoutMs: number;
  /** What one message is, in the log lines: `run event`. */
  noun: string;
  /** Reads one delivery: its settlement at once (a message refused unread), or its key and its work (or its item). */
  route: (message: ConsumeMessage) => MessageSettlement | OrderedWork | OrderedItem<T>;
  /** Required when route returns items. */
  together?: TogetherHandler<T>;
};

type Delivery<T> = { channel: Channel; message: ConsumeMessage; work: OrderedWork | OrderedItem<T> };

/**
 * Consumes a queue with manual acks, keeping the order of each key: the messages of one key are handled one after
 * another, in delivery order, while other keys proceed in parallel (up to `parallel`, within the prefetch). Deliveries
 * routed as items are handed to the `together` handler in groups: whatever a key has queued when its turn comes (it
 * queues while its previous group is being handled, or while it waits for a turn), up to `max`, so a busy key costs one
 * handling per group instead of one per message. A message is settled only once its work is done, so a crash or a lost
 * connection mid-work leaves it to be redelivered. close() cancels the consumer, lets the work in hand finish within
 * drainTimeoutMs, then closes; what did not finish is redelivered.
 */
export class OrderedConsumer<T = never> {
  private readonly connection: RecoveringConnection;
  private consumer: { channel: Channel; consumerTag: string } | null = null;
  private closing = new AbortController();
  /** Each key's deliveries not yet handled; a key is here while its lane is being driven. */
  private readonly lanes = new Map<string, Delivery<T>[]>();
  private readonly inFlight = new Set<Promise<void>>();
  private active = 0;
  private readonly turns: (() => void)[] = [];

  constructor(private readonly options: OrderedConsumerOptions<T>) {
    if (options.together && !(Number.isInteger(options.together.max) && options.together.max >= 1)) {
      throw new Error(`OrderedConsumer: together.max must be a positive integer, not ${options.together.max}.`);
    }
    if (options.parallel !== undefined && !(Number.isInteger(options.parallel) && options.parallel >= 1)) {
      throw new Error(`OrderedConsumer: parallel must be a positive integer, not ${options.parallel}.`);
    }
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
        `${this.inFlight.size} key(s) of ${this.options.noun}s still in hand after ${this.options.drainTimeoutMs} ms; closing leaves them for redelivery.`,
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
    let routed: MessageSettlement | OrderedWork | OrderedItem<T>;
    try {
      routed = this.options.route(message);
      if ('item' in routed && !this.options.together) throw new Error('an item routed to a consumer without a together handler');
    } catch (error) {
      routed = { ack: false, reason: `reading it failed: ${describeBrokerError(error)}` };
    }
    if (!('key' in routed)) {
      this.settle(channel, message, routed);
      return;
    }
    const { key } = routed;
    const queued = this.lanes.get(key);
    if (queued) {
      queued.push({ channel, message, work: routed });
      return;
    }
    const lane = [{ channel, message, work: routed }];
    this.lanes.set(key, lane);
    const driving = this.drive(key, lane).finally(() => this.inFlight.delete(driving));
    this.inFlight.add(driving);
  }

  /** Handles a key's deliveries until none is left: a work alone, consecutive items together (up to `max`). */
  private async drive(key: string, lane: Delivery<T>[]): Promise<void> {
    while (lane.length > 0) {
      await this.turn();
      try {
        const head = lane[0].work;
        const size = 'run' in head ? 1 : this.leadingItems(lane);
        const group = lane.splice(0, size);
        const settlements = await this.handle(key, group);
        group.forEach((delivery, index) => {
          const settlement = settlements[index];
          if (settlement) this.settle(delivery.channel, delivery.message, settlement);
        });
      } finally {
        this.endTurn();
      }
    }
    // In the same tick as the check above: a delivery arriving from now on starts a lane of its own.
    this.lanes.delete(key);
  }

  private leadingItems(lane: readonly Delivery<T>[]): number {
    const max = this.options.together?.max ?? 1;
    let count = 0;
    while (count < lane.length && count < max && 'item' in lane[count].work) count += 1;
    return count;
  }

  /** One settlement (or null, leaving it for redelivery) per delivery of the group; a failing work settles none. */
  private async handle(key: string, group: readonly Delivery<T>[]): Promise<readonly (MessageSettlement | null)[]> {
    const signal = this.closing.signal;
    try {
      const head = group[0].work;
      if ('run' in head) return [await head.run(signal)];
      const items = group.map((delivery) => (delivery.work as OrderedItem<T>).item);
      const settlements = (await this.options.together?.run(key, items, signal)) ?? [];
      if (settlements.length !== group.length) throw new Error(`${settlements.length} settlement(s) for ${group.length} message(s)`);
      return settlements;
    } catch (error) {
      this.options.logger.error(`Handling ${group.length} ${this.options.noun}(s) of ${key} failed: ${describeBrokerError(error)}`);
      return group.map(() => null);
    }
  }

  /** Waits for one of the `parallel` turns. */
  private async turn(): Promise<void> {
    if (this.options.parallel === undefined || this.active < this.options.parallel) {
      this.active += 1;
      return;
    }
    // The turn is handed over by endTurn, so `active` stays counted.
    await new Promise<void>((resolve) => this.turns.push(resolve));
  }

  private endTurn(): void {
    const next = this.turns.shift();
    if (next) next();
    else this.active -= 1;
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
