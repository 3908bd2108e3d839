import { randomUUID } from 'node:crypto';
import { DISPATCH_TOKEN_HEADER, type AgentRunEvent } from '@naalya/agent-tools';
import { ConfirmPublisher } from '@naalya/rmq';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { brokerUserOf } from '../core/broker-credentials.js';
import type { RunEventMeta, RunEventSink } from './agent-run.executor.js';

export type RunEventPublisherOptions = {
  rabbitmqUrl: string;
  /** The topic exchange declared by the topology setup; the routing key of every event is its run id. */
  exchange: string;
};

export const RUN_EVENT_PUBLISHER_OPTIONS = Symbol('RunEventPublisherOptions');

/**
 * Publishes run events to the run events exchange, routed by run id: persistent, on a confirm channel, one
 * at a time, each awaited until the broker confirms it. So events reach the exchange in the order they
 * were published, and a run step is acknowledged only after all its events are safely with the broker.
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

  async publish(event: AgentRunEvent, meta: RunEventMeta): Promise<void> {
    await this.publisher.publish(this.options.exchange, event.runId, Buffer.from(JSON.stringify(event)), {
      // Not mandatory, as the worker's events have never been: the server's ingest queue is bound to the exchange with `#`.
      mandatory: false,
      contentType: 'application/json',
      // The server stores each event once by this id, so a redelivery of the same message is not a second row.
      messageId: randomUUID(),
      type: event.type,
      timestamp: Math.floor(Date.now() / 1000),
      // Validated by RabbitMQ against the connection's user, so the server can tell the worker's events from forgeries.
      userId: this.brokerUser,
      headers: { [DISPATCH_TOKEN_HEADER]: meta.dispatchToken },
    });
  }
}
