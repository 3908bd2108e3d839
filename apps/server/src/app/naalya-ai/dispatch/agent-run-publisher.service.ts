import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, ServiceUnavailableException, type BeforeApplicationShutdown } from '@nestjs/common';
import { AGENT_RUN_PATTERN, agentRunRequestSchema, type AgentRunRequest } from '@naalya/agent-tools';
import { connectRecovering, rmqNames } from '@naalya/rmq';
import type { ChannelModel, ConfirmChannel, RecoveringChannelModel } from 'amqplib';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';

export const AGENT_UNAVAILABLE_ERROR = 'The assistant cannot be reached right now. Try again in a moment.';

const CONFIRM_TIMEOUT_MS = 5_000;

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * Publishes run steps to the runs queue as Nest event packets `{ pattern: AGENT_RUN_PATTERN, data }`, which the
 * worker's AckAfterReplyTransport routes to its @EventPattern handler.
 *
 * Plain amqplib on a confirm channel rather than a Nest ClientRMQ `emit`: the caller learns that the broker has
 * taken the message (persistent, durable queue, publisher confirm, `mandatory` so a missing queue is an error), and a
 * broker that is down fails the request at once (503, and the run, already committed, is marked failed) instead of
 * being buffered in memory by amqp-connection-manager and sent, or lost, later. Steps are published after their
 * run's row commits (AgentThreadsService.dispatch): the worker's first tool call must find the run in flight.
 */
@Injectable()
export class AgentRunPublisher implements BeforeApplicationShutdown {
  private readonly logger = new Logger(AgentRunPublisher.name);
  private readonly queue: string;
  private connection: RecoveringChannelModel | null = null;
  private closing = false;
  private channel: ConfirmChannel | null = null;
  private readonly returned = new Set<string>();

  constructor(@Inject(SERVER_CONFIG) private readonly config: ServerConfig) {
    this.queue = rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE).runsQueue;
  }

  /** Connects (and keeps reconnecting); fails if the broker or the runs queue cannot be reached at startup. */
  async start(): Promise<void> {
    if (this.connection) return;
    this.closing = false;
    const connection = await connectRecovering(this.config.RABBITMQ_URL, {
      connectionName: 'naalya-server-run-publisher',
      recovery: { initialMaxRetries: 5 },
      setup: (model) => this.openChannel(model),
    });
    this.connection = connection;
    connection.on('error', (error: Error) => this.logger.error(`RabbitMQ connection error: ${error.message}`));
    connection.on('disconnect', (error: Error) => this.logger.warn(`Disconnected from RabbitMQ: ${error.message}. Reconnecting.`));
    try {
      await connection.waitForConnect();
    } catch (error) {
      this.connection = null;
      await connection.close().catch(() => undefined);
      throw new Error(`Could not start publishing runs to "${this.queue}": ${describe(error)}`);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.closing = true;
    const connection = this.connection;
    this.connection = null;
    this.channel = null;
    await connection?.close().catch(() => undefined);
  }

  /** Resolves once the broker has confirmed the message; throws 503 otherwise. */
  async publish(request: AgentRunRequest): Promise<void> {
    const channel = this.channel;
    if (!channel) throw new ServiceUnavailableException(AGENT_UNAVAILABLE_ERROR);
    const data = agentRunRequestSchema.parse(request);
    const messageId = randomUUID();
    const body = Buffer.from(JSON.stringify({ pattern: AGENT_RUN_PATTERN, data }));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no confirm within ${CONFIRM_TIMEOUT_MS} ms`)), CONFIRM_TIMEOUT_MS);
        const settle = (error: unknown) => {
          clearTimeout(timer);
          const wasReturned = this.returned.delete(messageId);
          if (error) reject(error instanceof Error ? error : new Error(String(error)));
          else if (wasReturned) reject(new Error(`queue "${this.queue}" does not exist`));
          else resolve();
        };
        try {
          channel.sendToQueue(
            this.queue,
            body,
            {
              persistent: true,
              mandatory: true,
              contentType: 'application/json',
              messageId,
              correlationId: data.context.run.runId,
              type: AGENT_RUN_PATTERN,
              appId: 'naalya-server',
              timestamp: Math.floor(Date.now() / 1000),
            },
            settle,
          );
        } catch (error) {
          settle(error);
        }
      });
    } catch (error) {
      this.logger.error(`Run ${data.context.run.runId}: publishing the ${data.kind} request failed: ${describe(error)}`);
      throw new ServiceUnavailableException(AGENT_UNAVAILABLE_ERROR);
    }
  }

  /** amqplib's recovery setup: runs after every (re)connection. */
  private async openChannel(model: ChannelModel): Promise<void> {
    const channel = await model.createConfirmChannel();
    channel.on('error', (error: Error) => this.logger.error(`RabbitMQ channel error: ${error.message}`));
    channel.on('close', () => {
      if (this.channel === channel) this.channel = null;
      // A channel closed under a live connection: closing the connection hands the restart to amqplib's recovery.
      if (!this.closing) model.close().catch(() => undefined);
    });
    // An unroutable mandatory message comes back before its confirm: remember it so the confirm reports it.
    channel.on('return', (message: { properties: { messageId?: string } }) => {
      if (message.properties.messageId) this.returned.add(message.properties.messageId);
    });
    await channel.checkQueue(this.queue);
    this.channel = channel;
  }
}
