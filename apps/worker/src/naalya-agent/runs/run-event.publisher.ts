import { randomUUID } from 'node:crypto';
import { DISPATCH_TOKEN_HEADER, type RunEventBatch } from '@naalya/agent-tools';
import { ConfirmPublisher } from '@naalya/rmq';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { brokerUserOf } from '../core/broker-credentials.js';
import type { RunEventMeta, RunEventSink } from './run-event.buffer.js';

export type RunEventPublisherOptions = {
  rabbitmqUrl: string;
  /** The topic exchange declared by the topology setup; the routing key of every event is its run id. */
  exchange: string;
};

export const RUN_EVENT_PUBLISHER_OPTIONS = Symbol('RunEventPublisherOptions');

/**
 * Publishes run event batches to the run events exchange, routed by run id: persistent, on a confirm channel, each
 * awaited until the broker confirms it. A step's buffer (run-event.buffer.ts) has one batch out at a time, so its
 * events reach the exchange in order, and the step is acknowledged only after all of them are safely with the broker.
 */
@Injectable()
export class RunEventPublisher implements RunEventSink, OnModuleInit, OnModuleDestroy {
  private readonly publisher: ConfirmPublisher;
  private readonly brokerUser: string;

  constructor(@Inject(RUN_EVENT_PUBLISHER_OPTIONS) private readonly options: RunEventPublisherOptions) {
    this.brokerUser = brokerUserOf(options.rabbitmqUrl);
    this.publisher = new ConfirmPublisher({
      url: options.rabbitmqUrl,
      connectionName: 'naalya-worker-run-events',
      what: `publishing to the "${options.exchange}" exchange`,
      logger: new Logger(RunEventPublisher.name),
      // One attempt at start-up: a worker that cannot reach the exchange fails to start at once. Afterwards, a step
      // redelivered as soon as the broker is back must find this connection back too: reconnect within a second, and
      // let a publish made meanwhile wait for it rather than fail the step.
      recovery: { initialMaxRetries: 0, maxDelay: 1_000 },
      reconnectWaitMs: 5_000,
      // Declared by the topology setup; checked, never asserted, so a mismatch fails loudly.
      check: (channel) => channel.checkExchange(options.exchange),
    });
  }

  // Eager, so a worker that cannot reach the exchange fails at start-up instead of on its first run.
  async onModuleInit(): Promise<void> {
    await this.publisher.start();
  }

  async onModuleDestroy(): Promise<void> {
    await this.publisher.close();
  }

  async publish(batch: RunEventBatch, meta: RunEventMeta): Promise<void> {
    await this.publisher.publish(this.options.exchange, batch.events[0].runId, Buffer.from(JSON.stringify(batch)), {
      // Not mandatory, as the worker's events have never been: the server's ingest queue is bound to the exchange with `#`.
      mandatory: false,
      contentType: 'application/json',
      // A new id per batch: the server keys each event's row by it and the event's index, so a redelivery of the same
      // message stores nothing twice.
      messageId: randomUUID(),
      timestamp: Math.floor(Date.now() / 1000),
      // Validated by RabbitMQ against the connection's user, so the server can tell the worker's events from forgeries.
      userId: this.brokerUser,
      headers: { [DISPATCH_TOKEN_HEADER]: meta.dispatchToken },
    });
  }
}
