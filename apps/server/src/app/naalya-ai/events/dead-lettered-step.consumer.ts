import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { AGENT_RUN_PATTERN } from '@naalya/agent-tools';
import {
  DEFAULT_MAX_MESSAGE_BYTES,
  OrderedConsumer,
  rmqNames,
  runsDeadLetterQueue,
  type MessageSettlement,
  type OrderedWork,
} from '@naalya/rmq';
import type { ConsumeMessage } from 'amqplib';
import { z } from 'zod';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { serverMetrics } from '../../core/observability/server-metrics.js';

/** The x-first-death-reason values RabbitMQ sets: the dead-letter counter's only label values (and other). */
const DEATH_REASONS = new Set(['rejected', 'expired', 'maxlen', 'delivery_limit']);

/**
 * Told of each run step the broker dead-lettered: the step crashed or hung every worker that took it (more deliveries
 * than the runs queue's delivery limit), or a worker refused it. `dispatchToken` is as the message carried it,
 * unverified: the handler checks it (signature, run, epoch) and fails the run only if that step is still its current
 * one. Every server instance consumes the queue and a message may come again, so a second call for the same step
 * must change nothing.
 */
export interface DeadLetteredStepHandler {
  failDeadLetteredStep(runId: string, dispatchToken: string): Promise<void>;
}

export const DEAD_LETTERED_STEP_HANDLER = Symbol('DEAD_LETTERED_STEP_HANDLER');

/** What the consumer reads of a dead-lettered step: whose run, which dispatch, and why the broker gave up on it. */
export type DeadLetteredStep = { runId: string; dispatchToken: string; reason: string };

/** Handler failures (the database, mostly) are retried in place before the message is given up on. */
const HANDLER_RETRIES = 5;
const HANDLER_FIRST_DELAY_MS = 100;
const HANDLER_MAX_DELAY_MS = 5_000;
/** Dead-lettered steps are rare; a few at a time is plenty, and leaves the pool to the requests. */
const PREFETCH = 4;

// Only what is needed, read leniently: a step a worker refused for one bad field must still fail its run.
const deadLetteredStepSchema = z.object({
  pattern: z.literal(AGENT_RUN_PATTERN),
  data: z.object({ context: z.object({ run: z.object({ runId: z.guid() }), dispatchToken: z.string().min(1).max(8_000) }) }),
});

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Why RabbitMQ dead-lettered a message (`delivery_limit`, `rejected`, `expired`), from the header it adds. */
const deathReason = (message: Pick<ConsumeMessage, 'properties'>): string => {
  const reason: unknown = message.properties.headers?.['x-first-death-reason'];
  return typeof reason === 'string' ? reason : 'reason unknown';
};

/** Reads one dead-lettered message as a run step, or says why it is not one. */
export const readDeadLetteredStep = (message: Pick<ConsumeMessage, 'content' | 'properties'>): DeadLetteredStep | { malformed: string } => {
  if (message.content.length > DEFAULT_MAX_MESSAGE_BYTES) return { malformed: `a body of ${message.content.length} bytes` };
  let body: unknown;
  try {
    body = JSON.parse(message.content.toString('utf8'));
  } catch {
    return { malformed: 'a body that is not JSON' };
  }
  const parsed = deadLetteredStepSchema.safeParse(body);
  if (!parsed.success) return { malformed: `not a run step with a run id and a dispatch token (${parsed.error.issues[0]?.path.join('.') || 'body'})` };
  const { run, dispatchToken } = parsed.data.data.context;
  return { runId: run.runId, dispatchToken, reason: deathReason(message) };
};

/**
 * Consumes the runs dead-letter queue (where the runs queue, a quorum queue, puts a step past its delivery limit or
 * refused by a worker) and hands each step to DEAD_LETTERED_STEP_HANDLER, which fails its run with a sentence instead
 * of leaving it running. A message is acknowledged once handed over, or once the handler has failed HANDLER_RETRIES
 * times (the run is then left to the sweeper, which ends it when its lease expires). A body that is not a run step is
 * acknowledged and logged: there is nowhere further to send it. Started by startAgentRunMessaging, like the ingest.
 */
@Injectable()
export class DeadLetteredStepConsumer implements BeforeApplicationShutdown {
  private readonly logger = new Logger(DeadLetteredStepConsumer.name);
  private readonly queue: string;
  private consumer: OrderedConsumer | null = null;

  constructor(
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
    @Inject(DEAD_LETTERED_STEP_HANDLER) private readonly handler: DeadLetteredStepHandler,
  ) {
    this.queue = runsDeadLetterQueue(rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE));
  }

  /** Starts consuming; fails if the broker or the queue (declared by the topology step) cannot be reached. */
  async start(connectionName = 'naalya-server-dead-lettered-steps'): Promise<void> {
    this.consumer ??= new OrderedConsumer({
      url: this.config.RABBITMQ_URL,
      connectionName,
      what: `consuming dead-lettered run steps from "${this.queue}"`,
      logger: this.logger,
      recovery: { initialMaxRetries: 5 },
      queue: this.queue,
      prefetch: PREFETCH,
      drainTimeoutMs: this.config.SHUTDOWN_DRAIN_TIMEOUT_MS,
      noun: 'dead-lettered run step',
      route: (message) => this.route(message),
    });
    await this.consumer.start();
  }

  /** Stops consuming, lets the steps in hand finish (bounded), then closes; what is left is redelivered. */
  async close(): Promise<void> {
    await this.consumer?.close();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.close();
  }

  private route(message: ConsumeMessage): MessageSettlement | OrderedWork {
    const step = readDeadLetteredStep(message);
    if ('malformed' in step) {
      this.logger.warn(`A dead-lettered message on "${this.queue}" (${deathReason(message)}) is ${step.malformed}; acknowledged and dropped.`);
      return { ack: true };
    }
    return { key: step.runId, run: (closing) => this.handOver(step, closing) };
  }

  private async handOver(step: DeadLetteredStep, closing: AbortSignal): Promise<MessageSettlement | null> {
    // The broker's reasons are a fixed set (rejected, expired, maxlen, delivery_limit); anything else is counted as other.
    serverMetrics.deadLetters.inc({ reason: DEATH_REASONS.has(step.reason) ? step.reason : 'other' });
    this.logger.warn(`Run ${step.runId}: its step was dead-lettered (${step.reason}).`);
    for (let failures = 0; ; ) {
      try {
        await this.handler.failDeadLetteredStep(step.runId, step.dispatchToken);
        return { ack: true };
      } catch (error) {
        failures += 1;
        if (closing.aborted) return null;
        if (failures > HANDLER_RETRIES) {
          this.logger.error(`Run ${step.runId}: its dead-lettered step could not be handled (${describe(error)}); dropped, the sweeper ends the run.`);
          return { ack: true };
        }
        this.logger.warn(`Run ${step.runId}: handling its dead-lettered step failed (attempt ${failures}): ${describe(error)}`);
        await sleep(Math.min(HANDLER_FIRST_DELAY_MS * 2 ** (failures - 1), HANDLER_MAX_DELAY_MS));
      }
    }
  }
}
