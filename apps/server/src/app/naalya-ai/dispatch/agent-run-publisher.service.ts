import { Inject, Injectable, Logger, ServiceUnavailableException, type BeforeApplicationShutdown } from '@nestjs/common';
import { AGENT_RUN_PATTERN, AGENT_THREAD_DELETED_PATTERN, agentRunRequestSchema, agentThreadDeletedSchema, type AgentRunRequest } from '@naalya/agent-tools';
import {
  ConfirmPublishError,
  ConfirmPublisher,
  MESSAGE_SIGNATURE_HEADER,
  brokerCredentialsOf,
  parseMessageSigningKey,
  rmqNames,
  signMessage,
  type MessageSigningKey,
} from '@naalya/rmq';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';

export const AGENT_UNAVAILABLE_ERROR = 'The assistant cannot be reached right now. Try again in a moment.';

const CONFIRM_TIMEOUT_MS = 5_000;
/**
 * How long a run start made while the publisher is between nodes waits for it to reconnect before answering 503:
 * moving to another cluster node took 270 ms to 1.3 s in the cluster test, so a node kill is bridged, not refused.
 */
const RECONNECT_WAIT_MS = 3_000;

/**
 * Publishes run steps to the runs queue as Nest event packets `{ pattern: AGENT_RUN_PATTERN, data }`, which the
 * worker's AckAfterReplyTransport routes to its @EventPattern handler.
 *
 * A ConfirmPublisher rather than a Nest ClientRMQ `emit`: the caller learns that the broker has taken the message
 * (persistent, durable queue, publisher confirm, `mandatory` so a missing queue is an error), and a broker that is
 * down fails the request within RECONNECT_WAIT_MS (503, and the run, already committed, is marked failed) instead of being buffered
 * in memory by amqp-connection-manager and sent, or lost, later. Steps are published after their run's row commits
 * (AgentThreadsService.dispatch): the worker's first tool call must find the run in flight.
 *
 * Each step carries the server's AMQP user_id (RabbitMQ refuses a publish whose user_id is not its connection's user)
 * and an Ed25519 signature of its exact body bytes by RUN_SIGNING_KEY (`x-naalya-signature: <kid>.<signature>`): the
 * worker runs only a step that has both, so neither another broker user nor an administrator can make it run one.
 */
@Injectable()
export class AgentRunPublisher implements BeforeApplicationShutdown {
  private readonly logger = new Logger(AgentRunPublisher.name);
  private readonly queue: string;
  private readonly publisher: ConfirmPublisher;
  private readonly signingKey: MessageSigningKey;
  /** The broker user of RABBITMQ_URL, read as amqplib reads it: the only user_id the broker lets this connection claim. */
  private readonly brokerUser: string;

  constructor(@Inject(SERVER_CONFIG) config: ServerConfig) {
    const queue = rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE).runsQueue;
    this.queue = queue;
    this.signingKey = parseMessageSigningKey(config.RUN_SIGNING_KEY);
    this.brokerUser = brokerCredentialsOf(config.RABBITMQ_URL).user;
    this.publisher = new ConfirmPublisher({
      url: config.RABBITMQ_URL,
      connectionName: 'naalya-server-run-publisher',
      what: `publishing runs to "${queue}"`,
      logger: this.logger,
      recovery: { initialMaxRetries: 5 },
      check: (channel) => channel.checkQueue(queue),
      confirmTimeoutMs: CONFIRM_TIMEOUT_MS,
      reconnectWaitMs: RECONNECT_WAIT_MS,
    });
  }

  /** Connects (and keeps reconnecting); fails if the broker or the runs queue cannot be reached at startup. */
  start(): Promise<void> {
    return this.publisher.start();
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.publisher.close();
  }

  /** Resolves once the broker has confirmed the message; throws 503 otherwise. */
  async publish(request: AgentRunRequest): Promise<void> {
    const data = agentRunRequestSchema.parse(request);
    try {
      await this.publishSigned(AGENT_RUN_PATTERN, data, data.context.run.runId);
    } catch (error) {
      // Disconnected or shut down: the connection's own log lines say so already.
      const unavailable = error instanceof ConfirmPublishError && (error.failure === 'disconnected' || error.failure === 'closed');
      if (!unavailable) {
        this.logger.error(`Run ${data.context.run.runId}: publishing the ${data.kind} request failed: ${error instanceof Error ? error.message : String(error)}`);
      }
      throw new ServiceUnavailableException(AGENT_UNAVAILABLE_ERROR);
    }
  }

  /**
   * Tells the workers a thread was deleted, so one of them deletes its checkpoints. Signed and published like a run
   * step (the worker admits it by the same check); throws when the broker did not confirm it.
   */
  async publishThreadDeleted(threadId: string): Promise<void> {
    await this.publishSigned(AGENT_THREAD_DELETED_PATTERN, agentThreadDeletedSchema.parse({ threadId }), threadId);
  }

  private async publishSigned(pattern: string, data: unknown, correlationId: string): Promise<void> {
    const body = Buffer.from(JSON.stringify({ pattern, data }));
    await this.publisher.publish('', this.queue, body, {
      contentType: 'application/json',
      correlationId,
      type: pattern,
      appId: 'naalya-server',
      timestamp: Math.floor(Date.now() / 1000),
      userId: this.brokerUser,
      headers: { [MESSAGE_SIGNATURE_HEADER]: signMessage(body, this.signingKey) },
    });
  }
}
