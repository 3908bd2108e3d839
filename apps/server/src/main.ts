import './tracing.js';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app/app.module.js';
import { MetricsServer, PinoLoggerService, addLogContextSource } from '@naalya/observability';
import { currentTraceId } from '@naalya/telemetry';
import { ConfigError, loadServerConfig, loadServerObservability, nestLogLevels } from './app/core/config/server-config.js';
import { useStrictBodyParsers } from './app/core/http/hostile-input.js';
import { serveHub } from './app/core/http/hub-static.js';
import { serverMetrics } from './app/core/observability/server-metrics.js';
import { connectToolTransport } from './app/core/transport/tool-transport.js';
import { startAgentRunMessaging } from './app/naalya-ai/agent-run-messaging.js';

const bootstrap = async () => {
  const config = loadServerConfig();
  const observability = loadServerObservability(config);
  // Every Nest and app log line through pino: JSON (production) or readable lines, with the ids in effect.
  const logger = new PinoLoggerService({ app: 'server', format: observability.logFormat, levels: nestLogLevels(config.LOG_LEVEL) });
  // Each line also names the trace it was written in (nothing with tracing off): logs and traces join on it.
  addLogContextSource(() => ({ traceId: currentTraceId() }));
  const app = await NestFactory.create(AppModule.forRoot(config), { abortOnError: false, logger });
  useStrictBodyParsers(app);
  // SIGTERM: stop consuming, finish the calls in flight, close the database, then exit.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  connectToolTransport(app, config);
  await app.startAllMicroservices();
  // Run dispatch and the ingest of run events (plain amqplib, outside Nest's microservices).
  await startAgentRunMessaging(app);
  // The Hub web UI, same origin (apps/hub/dist, when built).
  serveHub(app);
  await app.listen(config.HTTP_PORT, config.HTTP_HOST);
  new Logger('Server').log(`HTTP on ${await app.getUrl()}; tool calls from queue "${config.AGENT_TOOLS_QUEUE}"`);
  // Last, so a scrape never sees a server that is not serving yet; its own port, never HTTP_PORT (checked in the config).
  if (observability.metrics) {
    const address = await new MetricsServer(serverMetrics.registry, observability.metrics).listen();
    new Logger('Server').log(`Metrics on http://${address.address}:${address.port}/metrics`);
  } else {
    new Logger('Server').log('Metrics off (METRICS_PORT unset).');
  }
};

bootstrap().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : `Server failed to start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
