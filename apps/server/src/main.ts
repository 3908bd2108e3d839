import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app/app.module.js';
import { ConfigError, loadServerConfig } from './app/core/config/server-config.js';

const bootstrap = async () => {
  const config = loadServerConfig();
  const app = await NestFactory.create(AppModule.forRoot(config), { bufferLogs: false });
  app.enableShutdownHooks();
  await app.listen(config.HTTP_PORT, '127.0.0.1');
  new Logger('Server').log(`HTTP on ${await app.getUrl()}`);
};

bootstrap().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
