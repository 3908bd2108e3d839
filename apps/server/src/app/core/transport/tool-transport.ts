import type { INestApplication } from '@nestjs/common';
import { Logger } from '@nestjs/common';
import { AckAfterReplyTransport, rmqNames } from '@naalya/rmq';
import type { ServerConfig } from '../config/server-config.js';
import { BrokerStatus } from '../health/broker-status.js';

/**
 * Connects the tool queue to the app's @MessagePattern handlers through the ack-after-reply transport.
 * Prefetch equals the database pool: more calls in flight than connections would only queue on the pool
 * while holding prefetch slots.
 */
export const connectToolTransport = (app: INestApplication, config: ServerConfig): AckAfterReplyTransport => {
  const names = rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE);
  const transport = new AckAfterReplyTransport({
    url: config.RABBITMQ_URL,
    queue: names.toolsQueue,
    prefetch: config.DATABASE_POOL_SIZE,
    deadLetterExchange: names.deadLetterExchange,
    handlerTimeoutMs: config.TOOL_HANDLER_TIMEOUT_MS,
    drainTimeoutMs: config.SHUTDOWN_DRAIN_TIMEOUT_MS,
    logger: new Logger('ToolTransport'),
    connectionName: 'naalya-server',
    // Only the worker's and the MCP door's broker users may call tools: anyone else who can reach the queue gets nothing
    // run. (No worker user configured: the reliability battery's weakened server, which requires none.)
    requireUserId: config.WORKER_BROKER_USER === undefined ? undefined : [config.WORKER_BROKER_USER, config.MCP_BROKER_USER],
  });
  const brokerStatus = app.get(BrokerStatus);
  transport.status.subscribe((status) => brokerStatus.report(status === 'connected'));
  app.connectMicroservice({ strategy: transport });
  return transport;
};
