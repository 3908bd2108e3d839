import { randomUUID } from 'node:crypto';
import type { AgentRunEvent } from '@naalya/agent-tools';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { connect, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { brokerUserOf, describeBrokerError } from '../core/broker-credentials.js';
import type { RunEventSink } from './agent-run.executor.js';

export type RunEventPublisherOptions = {
  rabbitmqUrl: string;
  /** The topic exchange declared by the topology setup; the routing key of every event is its run id. */
  exchange: string;
};

export const RUN_EVENT_PUBLISHER_OPTIONS = Symbol('RunEventPublisherOptions');

type Connection = { model: ChannelModel; channel: ConfirmChannel };

/**
 * Publishes run events to the run events exchange, routed by run id: persistent, on a confirm channel, one
 * at a time, each awaited until the broker confirms it. So events reach the exchange in the order they
 * were published, and a run step is acknowledged only after all its events are safely with the broker.
 */
@Injectable()
export class RunEventPublisher implements RunEventSink, OnModuleInit, OnModuleDestroy {
  private connection: Promise<Connection> | null = null;
  private readonly brokerUser: string;
  private readonly logger = new Logger(RunEventPublisher.name);
  private closing = false;

  constructor(@Inject(RUN_EVENT_PUBLISHER_OPTIONS) private readonly options: RunEventPublisherOptions) {
    this.brokerUser = brokerUserOf(options.rabbitmqUrl);
  }

  // Eager, so a worker that cannot reach the exchange fails at start-up instead of on its first run.
  async onModuleInit(): Promise<void> {
    await this.channel();
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    const connection = await this.connection?.catch(() => null);
    this.connection = null;
    await connection?.model.close().catch(() => undefined);
  }

  async publish(event: AgentRunEvent): Promise<void> {
    const { channel } = await this.channel();
    const content = Buffer.from(JSON.stringify(event));
    await new Promise<void>((resolve, reject) => {
      channel.publish(
        this.options.exchange,
        event.runId,
        content,
        {
          persistent: true,
          contentType: 'application/json',
          // The server stores each event once by this id, so a redelivery of the same message is not a second row.
          messageId: randomUUID(),
          type: event.type,
          timestamp: Math.floor(Date.now() / 1000),
          // Validated by RabbitMQ against the connection's user, so the server can tell the worker's events from forgeries.
          userId: this.brokerUser,
        },
        (error: unknown) => (error ? reject(error instanceof Error ? error : new Error('The broker refused the event.')) : resolve()),
      );
    });
  }

  // One connection and confirm channel, reopened on the next publish after the broker dropped them.
  private channel(): Promise<Connection> {
    if (this.closing) return Promise.reject(new Error('The run event publisher is closed.'));
    this.connection ??= this.open().catch((error: unknown) => {
      this.connection = null;
      throw new Error(`Cannot publish to the "${this.options.exchange}" exchange: ${describeBrokerError(error)}`);
    });
    return this.connection;
  }

  private async open(): Promise<Connection> {
    const model = await connect(this.options.rabbitmqUrl, { noDelay: true, clientProperties: { connection_name: 'naalya-worker-run-events' } });
    const forget = () => {
      this.connection = null;
    };
    model.on('error', (error: Error) => this.logger.warn(`Run events connection error: ${describeBrokerError(error)}`));
    model.on('close', forget);
    try {
      const channel = await model.createConfirmChannel();
      channel.on('error', (error: Error) => this.logger.warn(`Run events channel error: ${describeBrokerError(error)}`));
      channel.on('close', () => {
        forget();
        model.close().catch(() => undefined);
      });
      // Declared by the topology setup; checked, never asserted, so a mismatch fails loudly.
      await channel.checkExchange(this.options.exchange);
      return { model, channel };
    } catch (error) {
      await model.close().catch(() => undefined);
      throw error;
    }
  }
}
