import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { agentRunEventSchema, type AgentRunEvent } from '@naalya/agent-tools';
import { DEFAULT_MAX_MESSAGE_BYTES, connectRecovering, foreignPublisher, rmqNames, runEventsIngestQueue } from '@naalya/rmq';
import type { Channel, ChannelModel, ConsumeMessage, RecoveringChannelModel } from 'amqplib';
import { z } from 'zod';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { AgentRunEventStore, type PersistOutcome } from './agent-run-event-store.service.js';

/** Database failures are retried in place (keeping the run's order) before the message is given up on. */
const STORE_RETRIES = 8;
const STORE_FIRST_DELAY_MS = 100;
const STORE_MAX_DELAY_MS = 5_000;

const runIdSchema = z.guid();

type Settlement = { ack: true } | { ack: false; reason: string };

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Consumes the run events the worker publishes on the run events topic exchange (routing key = run id), from the
 * one durable queue every server instance consumes (bound with `#`, declared by declareTopology). The queue has a
 * single active consumer: the contract carries no sequence of its own, so publish order is the only order a run's
 * events have, and RabbitMQ keeps it only towards one consumer; the other instances stand by and take over, with
 * the unacknowledged messages in their places, if it goes. Within the active consumer, runs proceed in parallel and
 * each run's events one after another. A message is acked only after its row commits; a redelivery (crash before
 * the ack) finds its message id already stored and is acked without a second row. Malformed messages, messages from
 * any publisher but the worker's broker user, and messages for a run that does not exist or whose thread differs, are
 * dead-lettered. A run's steps are published only once its row has committed (AgentThreadsService.dispatch), so no
 * event of a real run arrives before its run: one for an unknown run is dead-lettered at once.
 */
@Injectable()
export class AgentRunIngest implements BeforeApplicationShutdown {
  private readonly logger = new Logger(AgentRunIngest.name);
  private readonly queue: string;
  private connection: RecoveringChannelModel | null = null;
  private consumer: { channel: Channel; consumerTag: string } | null = null;
  private closing = false;
  /** The tail of each run's chain of messages: a run's events are stored in delivery order. */
  private readonly runTails = new Map<string, Promise<void>>();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
    private readonly store: AgentRunEventStore,
  ) {
    this.queue = runEventsIngestQueue(rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE));
  }

  /** Starts consuming; fails if the broker or the queue (declared by the topology step) cannot be reached. */
  async start(connectionName = 'naalya-server-run-events'): Promise<void> {
    if (this.connection) return;
    this.closing = false;
    const connection = await connectRecovering(this.config.RABBITMQ_URL, {
      connectionName,
      recovery: { initialMaxRetries: 5 },
      setup: (model) => this.startConsuming(model),
    });
    this.connection = connection;
    connection.on('error', (error: Error) => this.logger.error(`RabbitMQ connection error (${this.queue}): ${error.message}`));
    connection.on('disconnect', (error: Error) => this.logger.warn(`Disconnected from RabbitMQ (${this.queue}): ${error.message}. Reconnecting.`));
    try {
      await connection.waitForConnect();
    } catch (error) {
      this.connection = null;
      await connection.close().catch(() => undefined);
      throw new Error(`Could not start consuming run events from "${this.queue}": ${describe(error)}`);
    }
  }

  /** Stops consuming, lets the messages in hand finish (bounded), then closes; what is left is redelivered. */
  async close(): Promise<void> {
    this.closing = true;
    const consumer = this.consumer;
    this.consumer = null;
    if (consumer) await consumer.channel.cancel(consumer.consumerTag).catch(() => undefined);
    if (this.inFlight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.inFlight]),
        new Promise((resolve) => (timer = setTimeout(resolve, this.config.SHUTDOWN_DRAIN_TIMEOUT_MS))),
      ]);
      clearTimeout(timer);
    }
    const connection = this.connection;
    this.connection = null;
    await connection?.close().catch(() => undefined);
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.close();
  }

  private async startConsuming(model: ChannelModel): Promise<void> {
    if (this.closing) return;
    const channel = await model.createChannel();
    // Without an 'error' listener a channel error crashes the process (amqp-node/amqplib#649).
    channel.on('error', (error: Error) => this.logger.error(`RabbitMQ channel error (${this.queue}): ${error.message}`));
    channel.on('close', () => {
      if (this.consumer?.channel !== channel) return;
      this.consumer = null;
      // Closing the connection hands the restart, with its backoff, to amqplib's recovery.
      if (!this.closing) model.close().catch(() => undefined);
    });
    await channel.prefetch(this.config.DATABASE_POOL_SIZE);
    const { consumerTag } = await channel.consume(
      this.queue,
      (message) => {
        if (message) this.receive(channel, message);
        else channel.close().catch(() => undefined);
      },
      { noAck: false },
    );
    this.consumer = { channel, consumerTag };
  }

  private receive(channel: Channel, message: ConsumeMessage): void {
    const parsed = this.parse(message);
    if ('reason' in parsed) {
      this.settle(channel, message, { ack: false, reason: parsed.reason });
      return;
    }
    const { runId, messageId, event } = parsed;
    const previous = this.runTails.get(runId) ?? Promise.resolve();
    const work = previous
      .then(() => this.persist(runId, messageId, event))
      .then((settlement) => {
        if (settlement) this.settle(channel, message, settlement);
      });
    this.track(runId, work);
  }

  private track(runId: string, work: Promise<void>): void {
    const done = work.catch((error: unknown) => this.logger.error(`Run ${runId}: handling an event failed: ${describe(error)}`));
    this.runTails.set(runId, done);
    this.inFlight.add(done);
    void done.finally(() => {
      this.inFlight.delete(done);
      if (this.runTails.get(runId) === done) this.runTails.delete(runId);
    });
  }

  private parse(message: ConsumeMessage): { runId: string; messageId: string; event: AgentRunEvent } | { reason: string } {
    const { content, fields, properties } = message;
    // Only the worker's broker user: RabbitMQ validates user_id against the publishing connection, so anyone else who
    // can write the exchange (an operator's account, a misconfigured service) cannot put words in a user's stream.
    const claimed = foreignPublisher(properties.userId, this.config.WORKER_BROKER_USER);
    if (claimed !== undefined) {
      this.logger.warn(`security event: run event refused (publisher not allowed): ${claimed}, only ${this.config.WORKER_BROKER_USER} may publish run events`);
      return { reason: `publisher not allowed (${claimed})` };
    }
    if (content.length > DEFAULT_MAX_MESSAGE_BYTES) return { reason: `a body of ${content.length} bytes` };
    let body: unknown;
    try {
      body = JSON.parse(content.toString('utf8'));
    } catch {
      return { reason: 'a body that is not JSON' };
    }
    const event = agentRunEventSchema.safeParse(body);
    if (!event.success) return { reason: 'a body that is not a run event' };
    const runId = fields.routingKey;
    if (event.data.runId !== runId || !runIdSchema.safeParse(runId).success) {
      return { reason: `routing key "${runId.slice(0, 100)}" that is not the event's run id` };
    }
    const messageId = typeof properties.messageId === 'string' ? properties.messageId : '';
    if (messageId.length === 0 || messageId.length > 200) return { reason: 'no message id (needed to store it exactly once)' };
    return { runId, messageId, event: event.data };
  }

  /** Stores one event, retrying database failures; resolves to how to settle it, or null to leave it unacked. */
  private async persist(runId: string, messageId: string, event: AgentRunEvent): Promise<Settlement | null> {
    let failures = 0;
    for (;;) {
      if (this.closing && failures > 0) return null;
      let outcome: PersistOutcome;
      try {
        outcome = await this.store.persist(runId, messageId, event);
      } catch (error) {
        failures += 1;
        if (failures > STORE_RETRIES) return { ack: false, reason: `storing it kept failing: ${describe(error)}` };
        this.logger.warn(`Run ${runId}: storing ${event.type} failed (attempt ${failures}): ${describe(error)}`);
        await sleep(Math.min(STORE_FIRST_DELAY_MS * 2 ** (failures - 1), STORE_MAX_DELAY_MS));
        continue;
      }
      switch (outcome.kind) {
        case 'persisted':
        case 'duplicate':
          return { ack: true };
        case 'foreign-thread':
          return { ack: false, reason: `thread ${event.threadId} is not the run's thread` };
        case 'unknown-run':
          return { ack: false, reason: 'no such run' };
      }
    }
  }

  private settle(channel: Channel, message: ConsumeMessage, settlement: Settlement): void {
    try {
      if (settlement.ack) channel.ack(message);
      else {
        this.logger.warn(`Dead-lettering a run event (routing key ${message.fields.routingKey.slice(0, 100)}): ${settlement.reason}.`);
        channel.nack(message, false, false);
      }
    } catch (error) {
      // Only a closed channel refuses; the broker has requeued the message, and its redelivery is stored once.
      this.logger.warn(`Could not settle a run event: ${describe(error)}`);
    }
  }
}
