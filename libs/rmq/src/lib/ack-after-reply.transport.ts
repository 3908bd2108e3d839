import { Logger, type LoggerService } from '@nestjs/common';
import { RmqContext, Server, type CustomTransportStrategy, type MessageHandler, type MsPattern } from '@nestjs/microservices';
import { isObservable, type Observable } from 'rxjs';
import { failSpan, withActiveSpan } from '@naalya/telemetry';
import type { Channel, ChannelModel, ConsumeMessage, ConsumeMessageFields, MessageProperties } from 'amqplib';
import { RecoveringConnection } from './rmq-connection.js';
import { runInRmqMessageFrame, type RmqMessageFrame } from './current-rmq-message.js';
import { parseRmqPacket, rmqError, type RmqReplyPacket } from './rmq-packet.js';
import { isDirectReplyTo } from './rmq-names.js';
import { startProcessSpan, type ProcessSpan } from './rmq-tracing.js';

export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024;

/** The reply to a message from a publisher the transport does not accept (requireUserId). */
export const PUBLISHER_REFUSED_ERROR = 'This message was refused: its publisher is not allowed to call here.';

export type AckAfterReplyTransportOptions = {
  /** amqp://user:password@host:port/vhost, or several nodes of one cluster separated by commas (see BrokerNodes). */
  url: string;
  /** Which node of the list the first attempt goes to; random by default. For tests. */
  firstNode?: number;
  /** Consumed as declared by `declareTopology`; never asserted here, so a mismatch fails loudly instead of redeclaring. */
  queue: string;
  /** Messages handled at once: size it to the database pool, since each call holds a connection. */
  prefetch: number;
  /** Checked at startup: without it, a refused message would be dropped instead of dead-lettered. */
  deadLetterExchange: string;
  /** Larger bodies are dead-lettered unparsed. Default 1 MiB. */
  maxMessageBytes?: number;
  /** A handler still running after this is answered with an error and dead-lettered, freeing its prefetch slot. */
  handlerTimeoutMs: number;
  /** How long close() waits for in-flight messages before closing the channel (which requeues what is left). */
  drainTimeoutMs: number;
  logger?: LoggerService;
  /** Shown by `rabbitmqctl list_connections client_properties`, to tell the server's connection from the worker's. */
  connectionName?: string;
  /**
   * Reconnect backoff (defaults 100 ms doubling to 30 s). Once connected, reconnection never gives up; `startupRetries`
   * (default 5) bounds only the first connection, so a missing broker or queue fails listen() instead of hanging it.
   */
  reconnect?: { initialDelayMs?: number; maxDelayMs?: number; startupRetries?: number };
  /**
   * Only messages whose AMQP `user_id` is this broker user (or one of these) are run; any other (or none) is answered
   * with a fixed error, dead-lettered and logged as a security event, before any handler. RabbitMQ validates `user_id`
   * against the publishing connection's user, so a publisher cannot claim another user's id.
   */
  requireUserId?: string | readonly string[];
  /**
   * false for a queue of events only (the worker's runs queue): nothing is ever published, not even an error reply to a
   * message that carries a replyTo. A consumer whose broker user may not write the default exchange would otherwise
   * have its channel closed (403) by that reply, and the message, requeued, would close it again on every delivery.
   * Default true.
   */
  replies?: boolean;
};

export type AckAfterReplyEvents = {
  connect: () => void;
  disconnect: (error: Error) => void;
  error: (error: Error) => void;
  blocked: (reason: string) => void;
  unblocked: () => void;
  'reconnect-failed': (error: Error) => void;
};

export type AckAfterReplyStatus = 'connected' | 'disconnected';

type Settlement = 'ack' | 'dead-letter';

type Outcome = {
  settlement: Settlement;
  /** Published before the settlement when the message has a `replyTo`. */
  reply?: RmqReplyPacket;
  /** Logged when the message is dead-lettered. */
  reason?: string;
};

type Consumer = { channel: Channel; consumerTag: string };

/** What a delivery needs of its transport: where its outcome goes, and who is told that it is no longer in flight. */
type DeliveryOwner = {
  settle(channel: Channel, message: ConsumeMessage, outcome: Outcome): void;
  finished(delivery: Delivery): void;
};

/**
 * One message between delivery and settlement, and the frame its handler runs in. A class, not a bundle of closures:
 * every message makes one, and its methods and getters live on the prototype (the closures were a measurable share of
 * the transport's CPU and garbage per call, bench/hop-profile.mjs).
 */
class Delivery implements RmqMessageFrame {
  /** Set by route() once the message is a call or event for a known handler. */
  pattern = '';
  id: string | undefined = undefined;
  isEvent = false;
  timer: NodeJS.Timeout | undefined = undefined;
  span: ProcessSpan['span'] | undefined = undefined;
  readonly logIds: Record<string, string> = {};
  // Made on first use: most handlers never read the signal, and an AbortController per message was a measurable
  // share of the transport's CPU per call (bench/, variant (b)).
  private abortController: AbortController | undefined = undefined;
  private cleanups: Array<() => void> | undefined = undefined;
  private settled = false;

  constructor(
    readonly message: ConsumeMessage,
    readonly channel: Channel,
    private readonly owner: DeliveryOwner,
  ) {}

  get properties(): MessageProperties {
    return this.message.properties;
  }

  get fields(): ConsumeMessageFields {
    return this.message.fields;
  }

  get content(): Buffer {
    return this.message.content;
  }

  get signal(): AbortSignal {
    return (this.abortController ??= new AbortController()).signal;
  }

  get aborted(): boolean {
    return this.abortController?.signal.aborted ?? false;
  }

  abort(reason: Error): void {
    (this.abortController ??= new AbortController()).abort(reason);
  }

  /** Runs once the message is settled or abandoned (at once if it already is). */
  onFinish(cleanup: () => void): void {
    if (this.settled) cleanup();
    else (this.cleanups ??= []).push(cleanup);
  }

  /** The first call wins; later ones do nothing, so a late handler result cannot settle a message twice. */
  settle(outcome: Outcome): void {
    if (this.finish()) this.owner.settle(this.channel, this.message, outcome);
  }

  /** Called by a close() that outlived its drain: the handler is told, and the closing channel requeues the message. */
  abandon(): void {
    this.abort(new Error('The transport closed before the handler finished.'));
    this.finish();
  }

  private finish(): boolean {
    if (this.settled) return false;
    this.settled = true;
    clearTimeout(this.timer);
    this.span?.end();
    if (this.cleanups) for (const cleanup of this.cleanups) cleanup();
    this.owner.finished(this);
    return true;
  }
}

const SETTLING_METHODS = new Set<PropertyKey>(['ack', 'nack', 'reject', 'ackAll', 'nackAll']);
const LOGGED_TEXT_LIMIT = 200;
const MASKED_ERROR = 'Internal server error';

const shorten = (text: string): string => (text.length > LOGGED_TEXT_LIMIT ? `${text.slice(0, LOGGED_TEXT_LIMIT)}…` : text);

/**
 * Undefined when a message was published by `required` or one of them (its AMQP `user_id`, which RabbitMQ validates
 * against the publishing connection's user); otherwise what it claimed instead, for the security event and the
 * dead-letter reason.
 */
export const foreignPublisher = (userId: unknown, required: string | readonly string[]): string | undefined => {
  if (typeof required === 'string' ? userId === required : required.some((user) => user === userId)) return undefined;
  return userId === undefined ? 'no user_id' : `user_id ${shorten(JSON.stringify(String(userId)))}`;
};
const describe = (error: unknown): string => {
  if (error instanceof Error) return error.message;
  if (typeof error !== 'object' || error === null) return String(error);
  try {
    return JSON.stringify(error);
  } catch {
    return String(error);
  }
};

/**
 * Coalesces the socket writes of one tick into one `writev`. amqplib writes every frame group with its own
 * `socket.write` (lib/mux.js), and with TCP_NODELAY each becomes its own syscall and segment: a reply and its ack,
 * and every other reply and ack settled in the same tick, cost one syscall each. Corked until the next tick, they
 * leave together, in the same order (the reply still precedes its ack on the wire), and nothing waits longer than the
 * current tick (performance.md §6.1: "coalesce writes per tick (cork/uncork) rather than relying on Nagle").
 */
const coalesceSocketWrites = (model: ChannelModel): void => {
  const socket = (model.connection as { stream?: unknown }).stream as
    | { write: (...args: unknown[]) => boolean; cork: () => void; uncork: () => void }
    | undefined;
  if (!socket || typeof socket.cork !== 'function' || typeof socket.uncork !== 'function' || typeof socket.write !== 'function') return;
  const write = socket.write;
  let corked = false;
  const uncork = (): void => {
    corked = false;
    socket.uncork();
  };
  socket.write = function coalescedWrite(this: unknown, ...args: unknown[]): boolean {
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write.apply(this, args);
  };
};

/**
 * A Nest transport on raw amqplib that settles each message only after its reply is published: a crash mid-call leaves
 * the message unacked (redelivered), and every message is acked or dead-lettered exactly once whatever happens, so no
 * message ever holds a prefetch slot for good. Nest's stock ServerRMQ acks on delivery, cannot ack after replying, and
 * hides message properties from handlers; see reference/transport.md.
 */
export class AckAfterReplyTransport extends Server<AckAfterReplyEvents, AckAfterReplyStatus> implements CustomTransportStrategy {
  protected override readonly logger: LoggerService;
  /** Event handler failures reach dispatch() (which dead-letters them), so Nest need not log them a second time. */
  override readonly propagatesEventHandlerErrors = true;

  private readonly options: Required<Omit<AckAfterReplyTransportOptions, 'logger' | 'connectionName' | 'reconnect' | 'requireUserId' | 'replies' | 'firstNode'>> &
    Pick<AckAfterReplyTransportOptions, 'connectionName' | 'reconnect' | 'requireUserId' | 'replies' | 'firstNode'>;
  private readonly connection: RecoveringConnection;
  private consumer: Consumer | null = null;
  private closing = false;
  private readonly inFlight = new Set<Delivery>();
  private readonly deliveryOwner: DeliveryOwner = {
    settle: (channel, message, outcome) => this.settle(channel, message, outcome),
    finished: (delivery) => {
      this.inFlight.delete(delivery);
      if (this.inFlight.size === 0) this.onIdle?.();
    },
  };
  /** Set by drain() while it waits: called when the last in-flight message is settled. */
  private onIdle: (() => void) | undefined;
  private readonly handlerChannels = new WeakMap<Channel, Channel>();

  constructor(options: AckAfterReplyTransportOptions) {
    super();
    const { logger, ...rest } = options;
    this.logger = logger ?? new Logger(AckAfterReplyTransport.name);
    this.options = { ...rest, maxMessageBytes: rest.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES };
    if (!Number.isInteger(rest.prefetch) || rest.prefetch < 1) {
      // prefetch 0 means unlimited to RabbitMQ, which would let a flood of slow calls exhaust the pool.
      throw new Error(`prefetch must be a positive integer, got ${rest.prefetch}.`);
    }
    for (const key of ['handlerTimeoutMs', 'drainTimeoutMs', 'maxMessageBytes'] as const) {
      const value = this.options[key];
      // setTimeout treats NaN or Infinity as 1 ms, which would fail every call instead of reporting the mistake.
      if (!Number.isFinite(value) || value <= 0) throw new Error(`${key} must be a positive number, got ${value}.`);
    }
    const { reconnect, connectionName, url, queue, firstNode } = this.options;
    this.connection = new RecoveringConnection({
      url,
      firstNode,
      connectionName,
      what: `consuming ${queue}`,
      logger: this.logger,
      recovery: {
        initialDelay: reconnect?.initialDelayMs ?? 100,
        maxDelay: reconnect?.maxDelayMs ?? 30_000,
        initialMaxRetries: reconnect?.startupRetries ?? 5,
      },
      setup: (model) => this.startConsuming(model),
    });
    this.connection.on('connect', () => this._status$.next('connected'));
    this.connection.on('disconnect', () => this._status$.next('disconnected'));
  }

  async listen(callback: (...optionalParams: unknown[]) => unknown): Promise<void> {
    this.closing = false;
    try {
      await this.connection.open();
      this._status$.next('connected');
      callback();
    } catch (error) {
      this.logger.error(describe(error));
      callback(error);
    }
  }

  /** Stops consuming, lets in-flight messages finish (bounded by drainTimeoutMs), then closes channel and connection. */
  async close(): Promise<void> {
    this.closing = true;
    const consumer = this.consumer;
    if (consumer) {
      try {
        await consumer.channel.cancel(consumer.consumerTag);
      } catch (error) {
        this.logger.warn(`Cancelling the consumer of ${this.options.queue} failed: ${describe(error)}`);
      }
    }
    await this.drain();
    this.consumer = null;
    await consumer?.channel.close().catch(() => undefined);
    await this.connection.close();
    this._status$.next('disconnected');
  }

  on<EventKey extends keyof AckAfterReplyEvents = keyof AckAfterReplyEvents>(
    event: EventKey,
    callback: AckAfterReplyEvents[EventKey],
  ): void {
    this.connection.on(event, callback);
  }

  /** The recovering amqplib connection. */
  unwrap<T>(): T {
    const connection = this.connection.current;
    if (!connection) throw new Error('AckAfterReplyTransport is not listening: call listen() first.');
    return connection as T;
  }

  /** Runs after every (re)connection, as amqplib's recovery setup. */
  private async startConsuming(model: ChannelModel): Promise<void> {
    if (this.closing) return;
    coalesceSocketWrites(model);
    const channel = await this.openChannel(model);
    this.connection.supervise(model, channel, () => this.onChannelClosed(channel));
    channel.on('handler-error', (error: Error, event: string) => this.logger.error(`Listener of '${event}' threw: ${error.message}`));
    await channel.checkExchange(this.options.deadLetterExchange);
    await channel.prefetch(this.options.prefetch, false);
    const { consumerTag } = await channel.consume(
      this.options.queue,
      (message) => (message ? this.dispatch(channel, message) : this.onConsumerCancelled(channel)),
      { noAck: false },
    );
    this.consumer = { channel, consumerTag };
    if (this.closing) await channel.cancel(consumerTag).catch(() => undefined);
  }

  /** The channel that consumes, replies and settles. A seam for tests that record the order of replies and acks. */
  protected openChannel(model: ChannelModel): Promise<Channel> {
    return model.createChannel();
  }

  /** Whether the connection restarts: the consuming channel closed while the transport is not closing. */
  private onChannelClosed(channel: Channel): boolean {
    if (this.consumer?.channel !== channel) return false;
    this.consumer = null;
    if (this.closing) return false;
    this._status$.next('disconnected');
    this.logger.warn(`The channel consuming ${this.options.queue} closed; reconnecting.`);
    return true;
  }

  /** The broker cancels the consumer when the queue is deleted: restart and let the setup report what is wrong. */
  private onConsumerCancelled(channel: Channel): void {
    this.logger.warn(`RabbitMQ cancelled the consumer of ${this.options.queue}.`);
    channel.close().catch(() => undefined);
  }

  private async drain(): Promise<void> {
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = await new Promise<boolean>((resolve) => {
      this.onIdle = () => resolve(false);
      timer = setTimeout(() => resolve(true), this.options.drainTimeoutMs);
    });
    this.onIdle = undefined;
    clearTimeout(timer);
    if (!gaveUp) return;
    this.logger.warn(`${this.inFlight.size} message(s) still running after ${this.options.drainTimeoutMs} ms; closing requeues them.`);
    for (const message of this.inFlight) message.abandon();
  }

  /** Handles one delivery and settles it exactly once; never throws. */
  private dispatch(channel: Channel, message: ConsumeMessage): void {
    const delivery = new Delivery(message, channel, this.deliveryOwner);
    // In flight until it is settled, or abandoned by a close() that outlived its drain.
    this.inFlight.add(delivery);
    try {
      this.route(delivery);
    } catch (error) {
      // route() does not throw by design; this keeps a bug there from leaving the message unsettled.
      this.logger.error(`Dispatch failed: ${describe(error)}`);
      delivery.settle({ settlement: 'dead-letter', reply: { err: rmqError(MASKED_ERROR), isDisposed: true }, reason: describe(error) });
    }
  }

  /** Dead-letters a message with a reply saying why (a call's reply; settle() drops it for an event). */
  private refuse(delivery: Delivery, reason: string): void {
    delivery.settle({ settlement: 'dead-letter', reply: { id: delivery.id, err: rmqError(reason), isDisposed: true }, reason });
  }

  private route(delivery: Delivery): void {
    const { message } = delivery;
    const { replyTo } = message.properties;
    const parsed = parseRmqPacket(message.content, this.options.maxMessageBytes);
    if (!parsed.ok) {
      delivery.settle({ settlement: 'dead-letter', reply: { err: rmqError(parsed.reason), isDisposed: true }, reason: parsed.reason });
      return;
    }
    const { packet } = parsed;
    delivery.id = packet.id;

    const { requireUserId } = this.options;
    const claimed = requireUserId === undefined ? undefined : foreignPublisher(message.properties.userId, requireUserId);
    if (claimed !== undefined) {
      this.logger.warn(`security event: message refused (publisher not allowed): ${claimed} on ${this.options.queue}, only ${String(requireUserId)} may publish here`);
      delivery.settle({
        settlement: 'dead-letter',
        reply: { id: delivery.id, err: rmqError(PUBLISHER_REFUSED_ERROR), isDisposed: true },
        reason: `publisher not allowed (${claimed})`,
      });
      return;
    }

    // A plain map lookup: the stock server JSON.parses every pattern and throws and catches once per string pattern.
    const pattern = this.normalizePattern(packet.pattern as MsPattern);
    const handler: MessageHandler | undefined = typeof pattern === 'string' ? this.messageHandlers.get(pattern) : undefined;
    if (!handler) {
      this.refuse(delivery, `There is no handler for pattern ${shorten(String(pattern))}.`);
      return;
    }
    delivery.pattern = pattern;
    delivery.isEvent = handler.isEventHandler === true;
    if (!delivery.isEvent && !replyTo) {
      // A call nobody can receive the answer to is refused unrun: a caller always sets replyTo, a forger need not.
      this.refuse(delivery, `A call to ${shorten(pattern)} without replyTo cannot be answered.`);
      return;
    }
    if (!delivery.isEvent && !isDirectReplyTo(replyTo)) {
      // settle() never publishes to such an address, so the refusal is dead-lettered unanswered (see isDirectReplyTo).
      this.logger.warn(`security event: call refused (replyTo is not a direct reply-to address): ${shorten(JSON.stringify(String(replyTo)))} on ${this.options.queue}`);
      this.refuse(delivery, `A call to ${shorten(pattern)} with a replyTo that is not a direct reply-to address is not answered.`);
      return;
    }

    // The consumer span, continuing the publisher's trace (traceparent in the headers, used for nothing else).
    const processing = startProcessSpan(this.options.queue, pattern, message);
    delivery.span = processing?.span;
    delivery.timer = setTimeout(this.timeOut, this.options.handlerTimeoutMs, delivery);

    const context = new RmqContext([message, this.handlerChannel(delivery.channel), pattern]);
    // The delivery is the handler's frame (currentRmqMessage()), and the trace's span is active around it when tracing.
    const run = (): void => {
      // Subscribing inside the frame too: a handler returning a cold Observable does its work on subscription.
      const result = handler(packet.data, context);
      // As Nest's transformToObservable, the reply is the last value of an Observable result, but a Promise (what Nest's
      // handler proxy returns) is awaited directly: the RxJS pipeline built per message cost CPU on every call.
      if (isObservable(result)) this.subscribe(delivery, result);
      else if (result instanceof Promise) result.then((value: unknown) => this.answer(delivery, value), (error: unknown) => this.fail(delivery, error));
      else this.succeed(delivery, result);
    };
    try {
      runInRmqMessageFrame(delivery, processing ? () => withActiveSpan(processing.span, run, processing.parent) : run);
    } catch (error) {
      failSpan(processing?.span, error, 'handler_failed');
      this.logger.error(`The handler of ${shorten(pattern)} threw synchronously: ${describe(error)}`);
      this.refuse(delivery, MASKED_ERROR);
    }
  }

  /** A handler past its time limit: the message is refused and the handler told (one function for every timer). */
  private readonly timeOut = (delivery: Delivery): void => {
    failSpan(delivery.span, undefined, 'timeout');
    const reason = `The handler of ${shorten(delivery.pattern)} exceeded its time limit of ${this.options.handlerTimeoutMs} ms.`;
    // Settled first, so the reply carries this reason even if the handler reacts to the abort by failing at once.
    this.refuse(delivery, reason);
    delivery.abort(new Error(reason));
  };

  /** A handler's resolved value: the reply, or an Observable whose last value is. */
  private answer(delivery: Delivery, value: unknown): void {
    if (isObservable(value)) this.subscribe(delivery, value);
    else this.succeed(delivery, value);
  }

  private succeed(delivery: Delivery, response: unknown): void {
    delivery.settle({ settlement: 'ack', reply: delivery.isEvent ? undefined : { id: delivery.id, response, isDisposed: true } });
  }

  private fail(delivery: Delivery, error: unknown): void {
    failSpan(delivery.span, error, 'handler_failed');
    delivery.settle({
      settlement: 'dead-letter',
      // Nest's exception filter has already turned a thrown error into { status, message }; a raw Error only
      // gets here from a handler registered outside Nest, and serialises to {} anyway.
      reply: delivery.isEvent ? undefined : { id: delivery.id, err: error instanceof Error ? rmqError(MASKED_ERROR) : error, isDisposed: true },
      reason: `The handler of ${shorten(delivery.pattern)} failed: ${shorten(describe(error))}`,
    });
  }

  private subscribe(delivery: Delivery, observable: Observable<unknown>): void {
    let response: unknown;
    const subscription = observable.subscribe({
      next: (value) => {
        response = value;
      },
      error: (error: unknown) => this.fail(delivery, error),
      complete: () => this.succeed(delivery, response),
    });
    delivery.onFinish(() => subscription.unsubscribe());
  }

  /** Publishes the reply (if the message can take one) on the channel that delivered it, and only then acks or nacks. */
  private settle(channel: Channel, message: ConsumeMessage, outcome: Outcome): void {
    const { replyTo, correlationId } = message.properties;
    let { settlement } = outcome;
    let reason = outcome.reason;
    // Only a direct reply-to address is ever answered, whatever the outcome (a malformed message too): any other name
    // would make the server publish into an ordinary queue of the caller's choosing (see isDirectReplyTo).
    if (outcome.reply && isDirectReplyTo(replyTo) && this.options.replies !== false) {
      let content: Buffer;
      try {
        content = Buffer.from(JSON.stringify(outcome.reply));
      } catch (error) {
        reason = `The reply could not be serialised: ${describe(error)}`;
        settlement = 'dead-letter';
        content = Buffer.from(JSON.stringify({ id: outcome.reply.id, err: rmqError('The reply could not be serialised.'), isDisposed: true }));
      }
      try {
        // The raw channel, not a ChannelWrapper that may publish later: the reply must be on the wire before the ack.
        channel.sendToQueue(replyTo, content, { correlationId });
      } catch (error) {
        this.logger.warn(`Reply to ${correlationId} was not published: ${describe(error)}`);
      }
    }
    if (settlement === 'dead-letter') {
      this.logger.warn(`Dead-lettering a message from ${this.options.queue} (correlationId ${correlationId}): ${reason}`);
    }
    try {
      if (settlement === 'ack') channel.ack(message);
      else channel.nack(message, false, false);
    } catch (error) {
      // Only a closed channel refuses: the broker has already requeued the message, which will be redelivered.
      this.logger.warn(`Could not ${settlement === 'ack' ? 'ack' : 'nack'} a message from ${this.options.queue}: ${describe(error)}`);
    }
  }

  /** Handlers get a channel whose settling methods do nothing: a second ack closes the channel (406) and requeues all. */
  private handlerChannel(channel: Channel): Channel {
    let proxy = this.handlerChannels.get(channel);
    if (!proxy) {
      const warn = (method: PropertyKey) => () =>
        this.logger.warn(`A handler called channel.${String(method)}(); ignored, the transport settles every message.`);
      proxy = new Proxy(channel, {
        get: (target, key, receiver) => (SETTLING_METHODS.has(key) ? warn(key) : Reflect.get(target, key, receiver)),
      });
      this.handlerChannels.set(channel, proxy);
    }
    return proxy;
  }
}
