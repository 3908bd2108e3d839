import './tracing.js';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MetricsServer, PinoLoggerService, addLogContextSource } from '@naalya/observability';
import { currentTraceId } from '@naalya/telemetry';
import { AckAfterReplyTransport } from '@naalya/rmq';
import { AppModule } from './app.module.js';
import { WorkerConfigError, enabledLogLevels, loadWorkerConfig, loadWorkerObservability, type WorkerConfig } from './app/config/worker-config.js';
import { workerMetrics } from './app/observability/worker-metrics.js';
import { ChatModelUnavailableError, assertChatModelAvailable } from './naalya-agent/core/model/chat-model.factory.js';

const readConfig = (): (WorkerConfig & { observability: ReturnType<typeof loadWorkerObservability> }) | null => {
  try {
    const config = loadWorkerConfig(process.env);
    return { ...config, observability: loadWorkerObservability(process.env, config) };
  } catch (error) {
    if (!(error instanceof WorkerConfigError)) throw error;
    console.error(error.message);
    return null;
  }
};

const bootstrap = async (): Promise<void> => {
  const config = readConfig();
  if (!config) {
    process.exitCode = 1;
    return;
  }
  // Every Nest and app log line through pino: JSON (production) or readable lines, with the run's and call's ids.
  const logger = new PinoLoggerService({ app: 'worker', format: config.observability.logFormat, levels: enabledLogLevels(config.logLevel) });
  Logger.overrideLogger(logger);
  // Each line also names the trace it was written in (nothing with tracing off): logs and traces join on it.
  addLogContextSource(() => ({ traceId: currentTraceId() }));
  try {
    await assertChatModelAvailable({ agentModel: config.agentModel, providerKeys: config.providerKeys, baseUrl: config.agentModelBaseUrl });
  } catch (error) {
    if (!(error instanceof ChatModelUnavailableError)) throw error;
    console.error(error.message);
    process.exitCode = 1;
    return;
  }
  // Run steps arrive on the runs queue and are acknowledged only when the step is done (events published),
  // so a worker that dies mid-step leaves the message to be redelivered.
  const transport = new AckAfterReplyTransport({
    url: config.rabbitmqUrl,
    queue: config.queues.runsQueue,
    prefetch: config.runs.concurrency,
    deadLetterExchange: config.queues.deadLetterExchange,
    handlerTimeoutMs: config.runs.stepTimeoutMs,
    drainTimeoutMs: Math.min(config.runs.stepTimeoutMs, 30_000),
    logger: new Logger('RunTransport'),
    connectionName: 'naalya-worker-runs',
    // Runs are events: nothing is ever answered on this queue, and the worker's broker user may not write replies.
    replies: false,
  });
  // abortOnError: false, so a failed start-up (broker or database unreachable) reaches the catch below and
  // exits 1 with its message, instead of Nest calling process.abort().
  const app = await NestFactory.createMicroservice(AppModule.forRoot(config), {
    strategy: transport,
    logger,
    abortOnError: false,
  });
  // SIGTERM: stop consuming, let run steps in flight finish (bounded), then close the broker and database.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.listen();
  // Its own port (METRICS_PORT), never the health port; a scrape needs nothing the steps use.
  if (config.observability.metrics) {
    const address = await new MetricsServer(workerMetrics.registry, config.observability.metrics).listen();
    Logger.log(`Metrics on http://${address.address}:${address.port}/metrics`, 'Worker');
  } else {
    Logger.log('Metrics off (METRICS_PORT unset).', 'Worker');
  }
  Logger.log(
    `Worker ready: runs from queue "${config.queues.runsQueue}", events to "${config.queues.runEventsExchange}", tool calls to "${config.queues.toolsQueue}" (${config.toolCallTimeoutMs} ms); model "${config.agentModel}".`,
    'Worker',
  );
};

bootstrap().catch((error: unknown) => {
  Logger.error(`Worker failed to start: ${error instanceof Error ? error.message : String(error)}`, 'Worker');
  // Exit now: connections opened before the failure (the broker, the database pool) would keep the process alive.
  process.exit(1);
});
