import { Inject, Injectable, type BeforeApplicationShutdown } from '@nestjs/common';
import { connectToAnyNode, rmqNames, runsDeadLetterQueue } from '@naalya/rmq';
import type { ChannelModel } from 'amqplib';
import { SERVER_CONFIG, type ServerConfig } from '../config/server-config.js';

/** How long /ready waits for the broker's counts before it answers without them. */
const READ_TIMEOUT_MS = 1_000;
const CONNECT_TIMEOUT_MS = 5_000;

/** Each dead-letter queue's message count by name; null where the broker could not say. */
export type DeadLetterDepth = Record<string, number | null>;

/**
 * How many messages wait in the two dead-letter queues (tool calls and run events refused or expired; run steps the
 * server has not yet read), for /ready's detail. A passive declare (checkQueue) per queue, which needs no permission,
 * on a connection of its own, opened at the first read and again after it goes. Depth never makes the server
 * unready: the queues are bounded (they drop their oldest), and a deep one is for an operator to look at.
 */
@Injectable()
export class DeadLetterDepths implements BeforeApplicationShutdown {
  private readonly queues: string[];
  private connection: Promise<ChannelModel> | null = null;

  constructor(@Inject(SERVER_CONFIG) private readonly config: ServerConfig) {
    const names = rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE);
    this.queues = [names.deadLetterQueue, runsDeadLetterQueue(names)];
  }

  /** The counts, or null for each queue the broker did not report within timeoutMs (unreachable, queue missing). */
  async read(timeoutMs = READ_TIMEOUT_MS): Promise<DeadLetterDepth> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), timeoutMs)));
    const counts = await Promise.race([this.count().catch(() => null), timedOut]);
    clearTimeout(timer);
    return Object.fromEntries(this.queues.map((queue, index) => [queue, counts?.[index] ?? null]));
  }

  async beforeApplicationShutdown(): Promise<void> {
    const connection = this.connection;
    this.connection = null;
    await connection?.then((model) => model.close()).catch(() => undefined);
  }

  private async count(): Promise<Array<number | null>> {
    const connection = await this.connect();
    // A channel per queue: a missing queue (404) closes the channel it was checked on, and only that one.
    return Promise.all(
      this.queues.map(async (queue) => {
        const channel = await connection.createChannel();
        channel.on('error', () => undefined);
        try {
          return (await channel.checkQueue(queue)).messageCount;
        } catch {
          return null;
        } finally {
          await channel.close().catch(() => undefined);
        }
      }),
    );
  }

  private connect(): Promise<ChannelModel> {
    if (this.connection) return this.connection;
    const opening = connectToAnyNode(this.config.RABBITMQ_URL, {
      noDelay: true,
      timeout: CONNECT_TIMEOUT_MS,
      clientProperties: { connection_name: 'naalya-server-health' },
    }).then(
      (model) => {
        model.on('error', () => undefined);
        model.on('close', () => {
          if (this.connection === opening) this.connection = null;
        });
        return model;
      },
      (error: unknown) => {
        if (this.connection === opening) this.connection = null;
        throw error;
      },
    );
    this.connection = opening;
    return opening;
  }
}
