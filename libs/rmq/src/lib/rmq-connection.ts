import type { LoggerService } from '@nestjs/common';
import { BrokerNodes } from './broker-nodes.js';
import { connect, type Channel, type ChannelModel, type RecoveringChannelModel, type RecoveryOptions } from 'amqplib';
import { brokerTlsOptions } from './broker-tls.js';

export type BrokerLogger = Pick<LoggerService, 'log' | 'warn' | 'error'>;

export type RecoveringConnectionOptions = {
  /**
   * amqp://user:password@host:port/vhost, or several nodes of one cluster separated by commas: each reconnection
   * attempt goes to the next one (BrokerNodes).
   */
  url: string;
  /** Which node of the list the first attempt goes to; random by default, so replicas spread. For tests. */
  firstNode?: number;
  /** Shown by `rabbitmqctl list_connections client_properties` and the management UI. */
  connectionName?: string;
  /** What the connection is for (`consuming run events from "q"`): named in its log lines and in a failed start. */
  what: string;
  logger: BrokerLogger;
  /** amqplib's backoff and retry bounds (`initialDelay`, `maxDelay`, `initialMaxRetries`...); its defaults otherwise. */
  recovery?: Omit<RecoveryOptions, 'setup' | 'waitForConnect'>;
  /** Runs after every (re)connection: open the channels and consumers this connection carries. */
  setup: (model: ChannelModel) => Promise<void>;
};

/** Any of the connection's listeners, typed by the caller; amqplib's `on` takes them untyped. */
type Listener = (...args: never[]) => void;
type UntypedListener = (...args: unknown[]) => void;

/** Connection errors can carry the broker URL: its credentials never reach a log line or an error. */
export const describeBrokerError = (error: unknown): string => {
  const text = error instanceof Error ? error.message : typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
  return text.replace(/\/\/[^/@\s"]*@/g, '//***@');
};

/**
 * Every long-lived broker connection of the apps: one amqplib re-opens by itself (running `setup` again each time),
 * with TCP_NODELAY (performance.md: Nagle stalls small RPC frames), a name, and one set of log lines. open() fails, and
 * closes what it opened, when the first connection does not come within the recovery's start-up attempts (or the
 * time given); after that, reconnecting is amqplib's. Listeners given to on() survive a close() and a new open().
 */
export class RecoveringConnection {
  private model: RecoveringChannelModel | null = null;
  private readonly listeners: Array<[string, Listener]> = [];
  private lastFailure: Error | undefined;
  private nodes: BrokerNodes | null = null;

  constructor(private readonly options: RecoveringConnectionOptions) {}

  /** The amqplib connection from open() until close(), reconnecting or not. */
  get current(): RecoveringChannelModel | null {
    return this.model;
  }

  /** `host:port` of the node the connection is on, or tries next. */
  get node(): string | undefined {
    return this.nodes?.current.address;
  }

  /** Why the last attempt to connect failed, or the connection went; for a failure reported while disconnected. */
  get lastError(): Error | undefined {
    return this.lastFailure;
  }

  on(event: string, listener: Listener): void {
    this.listeners.push([event, listener]);
    this.model?.on(event, listener as UntypedListener);
  }

  /** Resolves on the first connection; `timeoutMs` bounds it in time as well, and its failure names the broker's last reason. */
  async open(timeoutMs?: number): Promise<void> {
    if (this.model) return;
    const { url, connectionName, recovery, setup, what, firstNode } = this.options;
    const nodes = new BrokerNodes(url, firstNode);
    // waitForConnect: false resolves before the first attempt, so every listener is on before anything is emitted.
    const model = await connect(nodes.target, {
      ...brokerTlsOptions(),
      noDelay: true,
      clientProperties: connectionName ? { connection_name: connectionName } : undefined,
      recovery: { ...recovery, waitForConnect: false, setup },
    });
    this.model = model;
    this.lastFailure = undefined;
    // Before every scheduled attempt, after a lost connection as after a failed one: the next node of the list.
    if (nodes.nodes.length > 1) model.on('reconnect-scheduled', () => nodes.advance());
    this.nodes = nodes;
    this.watch(model);
    for (const [event, listener] of this.listeners) model.on(event, listener as UntypedListener);
    let timer: NodeJS.Timeout | undefined;
    try {
      const first = model.waitForConnect();
      if (timeoutMs === undefined) await first;
      else {
        const timedOut = new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            const reason = this.lastFailure ? `: ${describeBrokerError(this.lastFailure)}` : '';
            reject(new Error(`no connection within ${timeoutMs} ms${reason}`));
          }, timeoutMs);
        });
        await Promise.race([first, timedOut]);
      }
    } catch (error) {
      if (this.model === model) this.model = null;
      await model.close().catch(() => undefined);
      throw new Error(`Could not start ${what}: ${describeBrokerError(error)}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Every channel this connection's setup opens: with an 'error' listener, since without one a channel error crashes the
   * process (amqp-node/amqplib#649); and when it closes and `restart` says so (it was the owner's live channel, and the
   * owner is not closing), the connection is closed too, which hands the restart, with its backoff, to amqplib's
   * recovery. When the connection itself went down that close is refused, and recovery is already under way.
   */
  supervise(model: ChannelModel, channel: Channel, restart: () => boolean): void {
    const { logger, what } = this.options;
    channel.on('error', (error: Error) => logger.error(`RabbitMQ channel error (${what}): ${describeBrokerError(error)}`));
    channel.on('close', () => {
      if (restart()) model.close().catch(() => undefined);
    });
  }

  async close(): Promise<void> {
    const model = this.model;
    this.model = null;
    await model?.close().catch(() => undefined);
  }

  private watch(model: RecoveringChannelModel): void {
    const { logger, what } = this.options;
    const remember = (error: Error) => {
      this.lastFailure = error;
    };
    model.on('connect', () => logger.log(`Connected to RabbitMQ at ${this.node ?? 'the broker'} (${what}).`));
    model.on('error', (error: Error) => logger.error(`RabbitMQ connection error (${what}): ${describeBrokerError(error)}`));
    model.on('disconnect', (error: Error) => {
      remember(error);
      logger.warn(`Disconnected from RabbitMQ (${what}): ${describeBrokerError(error)}. Reconnecting.`);
    });
    model.on('connect-failed', (error: Error) => {
      remember(error);
      logger.warn(`Connecting to RabbitMQ (${what}) failed: ${describeBrokerError(error)}`);
    });
    model.on('reconnect-failed', (error: Error) => logger.error(`Gave up reconnecting to RabbitMQ (${what}): ${describeBrokerError(error)}`));
    model.on('blocked', (reason: string) => logger.warn(`RabbitMQ blocked the connection (${what}): ${reason}`));
    model.on('unblocked', () => logger.log(`RabbitMQ unblocked the connection (${what}).`));
    model.on('handler-error', (error: Error, event: string) => logger.error(`Listener of '${event}' threw: ${error.message}`));
  }
}
