import { connect, type ChannelModel, type RecoveringChannelModel, type RecoveryOptions } from 'amqplib';

export type RecoveringConnectionOptions = {
  /** Shown by `rabbitmqctl list_connections client_properties` and the management UI. */
  connectionName?: string;
  /** amqplib's backoff and retry bounds (`initialDelay`, `maxDelay`, `initialMaxRetries`...); its defaults otherwise. */
  recovery?: Omit<RecoveryOptions, 'setup' | 'waitForConnect'>;
  /** Runs after every (re)connection: open the channels and consumers this connection carries. */
  setup: (model: ChannelModel) => Promise<void>;
};

/**
 * Every long-lived connection of the apps: one that amqplib re-opens by itself, with TCP_NODELAY (performance.md: Nagle
 * stalls small RPC frames) and a name. It resolves before the first attempt, so the caller attaches its listeners before
 * anything can be emitted, then awaits `waitForConnect()` for the first connection.
 */
export const connectRecovering = (url: string, options: RecoveringConnectionOptions): Promise<RecoveringChannelModel> =>
  connect(url, {
    noDelay: true,
    clientProperties: options.connectionName ? { connection_name: options.connectionName } : undefined,
    recovery: { ...options.recovery, waitForConnect: false, setup: options.setup },
  });
