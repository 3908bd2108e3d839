import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { WorkerConfigError, enabledLogLevels, loadWorkerConfig, type WorkerConfig } from './app/config/worker-config.js';

const readConfig = (): WorkerConfig | null => {
  try {
    return loadWorkerConfig(process.env);
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
  // abortOnError: false, so a failed start-up (broker unreachable) reaches the catch below and exits 1
  // with its message, instead of Nest calling process.abort().
  const app = await NestFactory.createApplicationContext(AppModule.forRoot(config), {
    logger: enabledLogLevels(config.logLevel),
    abortOnError: false,
  });
  // SIGTERM closes the app: onModuleDestroy closes the broker connection.
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  Logger.log(
    `Worker ready: tool calls go to queue "${config.queues.toolsQueue}" with a ${config.toolCallTimeoutMs} ms timeout; model "${config.agentModel}".`,
    'Worker',
  );
};

bootstrap().catch((error: unknown) => {
  Logger.error(`Worker failed to start: ${error instanceof Error ? error.message : String(error)}`, 'Worker');
  process.exitCode = 1;
});
