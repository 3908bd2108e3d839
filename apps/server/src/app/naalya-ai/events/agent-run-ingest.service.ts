import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { dispatchKeyRing } from '../../core/config/signing-key-ring.js';
import { DISPATCH_TOKEN_HEADER, runEventBatchSchema, type AgentRunEvent } from '@naalya/agent-tools';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  OrderedConsumer,
  foreignPublisher,
  rmqNames,
  runEventsIngestQueue,
  type MessageSettlement,
  type OrderedItem,
} from '@naalya/rmq';
import type { ConsumeMessage } from 'amqplib';
import { z } from 'zod';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { verifyDispatchToken } from '../dispatch/dispatch-token.js';
import { AgentRunEventStore, type PersistOutcome, type RunEventMessage } from './agent-run-event-store.service.js';
import { serverMetrics } from '../../core/observability/server-metrics.js';


/** Told when a worker's event ended a run (so the thread's next queued run can start). */
export type RunEndedListener = (runId: string, threadId: string) => void;

/** Database failures are retried in place (keeping the run's order) before the message is given up on. */
const STORE_RETRIES = 8;
const STORE_FIRST_DELAY_MS = 100;
const STORE_MAX_DELAY_MS = 5_000;

/** The most messages of one run stored in one transaction (each at most RUN_EVENT_BATCH_MAX events). */
export const RUN_EVENTS_COALESCE_MAX = 32;

const runIdSchema = z.guid();

/** What a refused batch held, for the log line: `3 events (TEXT_MESSAGE_CONTENT..RUN_FINISHED)`. */
const describeBatch = (events: readonly AgentRunEvent[]): string =>
  `${events.length} event${events.length === 1 ? '' : 's'} (${events[0]?.type}${events.length > 1 ? `..${events.at(-1)?.type}` : ''})`;

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Consumes the run events the worker publishes on the run events topic exchange (routing key = run id), one
 * RunEventBatch per message, from the one durable queue every server instance consumes (bound with `#`, declared by
 * declareTopology). The queue has a single active consumer: the contract carries no sequence of its own, so publish
 * order is the only order a run's events have, and RabbitMQ keeps it only towards one consumer; the other instances
 * stand by and take over, with the unacknowledged messages in their places, if it goes.
 *
 * How one consumer keeps up with 64 runs streaming tokens at once: it never pays per token. The worker sends a step's
 * tokens in batches (a message per flush, not per token); the prefetch (RUN_EVENTS_PREFETCH, default 256) lets every
 * streaming run have messages in hand; runs are stored in parallel (half the database pool, leaving the rest to
 * requests and tool calls), each run's messages in order (OrderedConsumer, keyed by run id); and whatever messages of a
 * run are waiting when its turn comes (they queue while its previous transaction commits, or while it waits for a
 * turn) are stored together, up to RUN_EVENTS_COALESCE_MAX, in one transaction: the run locked once, one INSERT, one
 * UPDATE, one NOTIFY. So the busier the runs, the more each transaction carries: the transaction rate is bounded by
 * the runs and the turns, not by the tokens.
 *
 * Each message is settled by its own outcome once its transaction commits: acked when stored, or when a redelivery
 * (crash before the ack) finds it already stored. Malformed messages, messages from any publisher but the worker's
 * broker user, messages without a valid dispatch token of their run, a batch with an event of another run or thread,
 * and messages for a run that does not exist or whose thread differs, are dead-lettered. A message of a step the
 * server has taken back (its epoch is not the run's, or the run is no longer running) is acknowledged and dropped: a
 * frozen worker that wakes up after its lease was given to another must not write. A run's steps are published only
 * once its row has committed, so no event of a real run arrives before its run: one for an unknown run is
 * dead-lettered at once.
 */
@Injectable()
export class AgentRunIngest implements BeforeApplicationShutdown {
  private readonly logger = new Logger(AgentRunIngest.name);
  private readonly queue: string;
  private consumer: OrderedConsumer<RunEventMessage> | null = null;
  private readonly endedListeners: RunEndedListener[] = [];

  constructor(
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
    private readonly store: AgentRunEventStore,
  ) {
    this.queue = runEventsIngestQueue(rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE));
  }
  /** Starts consuming; fails if the broker or the queue (declared by the topology step) cannot be reached. */
  async start(connectionName = 'naalya-server-run-events'): Promise<void> {
    this.consumer ??= new OrderedConsumer<RunEventMessage>({
      url: this.config.RABBITMQ_URL,
      connectionName,
      what: `consuming run events from "${this.queue}"`,
      logger: this.logger,
      recovery: { initialMaxRetries: 5 },
      queue: this.queue,
      prefetch: this.config.RUN_EVENTS_PREFETCH,
      parallel: Math.max(1, Math.floor(this.config.DATABASE_POOL_SIZE / 2)),
      drainTimeoutMs: this.config.SHUTDOWN_DRAIN_TIMEOUT_MS,
      noun: 'run event',
      route: (message) => this.route(message),
      together: { max: RUN_EVENTS_COALESCE_MAX, run: (runId, messages, closing) => this.persist(runId, messages, closing) },
    });
    await this.consumer.start();
  }

  onRunEnded(listener: RunEndedListener): void {
    this.endedListeners.push(listener);
  }

  /** Stops consuming, lets the messages in hand finish (bounded), then closes; what is left is redelivered. */
  async close(): Promise<void> {
    await this.consumer?.close();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.close();
  }

  private route(message: ConsumeMessage): MessageSettlement | OrderedItem<RunEventMessage> {
    const parsed = this.parse(message);
    if ('reason' in parsed) return { ack: false, reason: parsed.reason };
    const { runId, ...batch } = parsed;
    return { key: runId, item: batch };
  }

  private parse(message: ConsumeMessage): ({ runId: string } & RunEventMessage) | { reason: string } {
    const { content, fields, properties } = message;
    if (fields.redelivered) serverMetrics.redeliveries.inc({ kind: 'run-event' });
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
    const batch = runEventBatchSchema.safeParse(body);
    if (!batch.success) return { reason: 'a body that is not a run event batch' };
    const { events } = batch.data;
    const runId = fields.routingKey;
    if (!runIdSchema.safeParse(runId).success || events.some((event) => event.runId !== runId)) {
      return { reason: `routing key "${runId.slice(0, 100)}" that is not the run id of every event in the batch` };
    }
    const messageId = typeof properties.messageId === 'string' ? properties.messageId : '';
    if (messageId.length === 0 || messageId.length > 200) return { reason: 'no message id (needed to store it exactly once)' };
    // The step's dispatch token names the run, its thread and the epoch the events belong to; the store fences on the epoch.
    const header = properties.headers?.[DISPATCH_TOKEN_HEADER];
    const token = verifyDispatchToken(dispatchKeyRing(this.config), typeof header === 'string' ? header : undefined);
    if (!token.ok) return { reason: `a dispatch token that is ${token.reason}` };
    if (token.claims.runId !== runId) return { reason: 'a dispatch token of another run' };
    if (events.some((event) => event.threadId !== token.claims.threadId)) return { reason: "an event of a thread that is not its dispatch token's" };
    return { runId, messageId, events, epoch: token.claims.epoch };
  }

  /**
   * Stores a run's waiting messages in one transaction, retrying database failures; resolves to how to settle each,
   * or to nulls to leave them all unacked.
   */
  private async persist(runId: string, messages: readonly RunEventMessage[], closing: AbortSignal): Promise<(MessageSettlement | null)[]> {
    let failures = 0;
    for (;;) {
      if (closing.aborted && failures > 0) return messages.map(() => null);
      let outcome: PersistOutcome;
      try {
        outcome = await this.store.persist(runId, messages);
      } catch (error) {
        failures += 1;
        if (failures > STORE_RETRIES) return messages.map(() => ({ ack: false, reason: `storing it kept failing: ${describe(error)}` }));
        this.logger.warn(`Run ${runId}: storing ${messages.length} message(s) of events failed (attempt ${failures}): ${describe(error)}`);
        await sleep(Math.min(STORE_FIRST_DELAY_MS * 2 ** (failures - 1), STORE_MAX_DELAY_MS));
        continue;
      }
      if (outcome.kind === 'unknown-run') return messages.map(() => ({ ack: false, reason: 'no such run' }));
      if (outcome.ended) for (const listener of this.endedListeners) listener(runId, outcome.threadId);
      return outcome.messages.map((message, index): MessageSettlement => {
        switch (message.kind) {
          case 'persisted':
          case 'duplicate':
            return { ack: true };
          case 'fenced':
            // A step the server took back (dispatched again, or cancelled) may still be talking: expected, never stored.
            this.logger.warn(
              `Run ${runId}: ${describeBatch(messages[index].events)} of epoch ${messages[index].epoch} refused (the run is ${message.status} at epoch ${message.epoch}).`,
            );
            return { ack: true };
          case 'foreign-thread':
            return { ack: false, reason: "an event of a thread that is not the run's" };
        }
      });
    }
  }
}
