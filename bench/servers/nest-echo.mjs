// Variant (b): the project's transport (AckAfterReplyTransport from @naalya/rmq, as the server connects it) in a
// bench-only Nest app whose one @MessagePattern handler echoes the envelope and skips execute(). It lives under
// bench/, is not in RPC_AGENT_TOOLS and is never loaded by the app, so no guard or registry sees it.
import 'reflect-metadata';
import { Controller, Logger, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePattern } from '@nestjs/microservices';
import { AckAfterReplyTransport, brokerCredentialsOf } from '@naalya/rmq';
import '../lib/cpu-reporter.mjs';

const { RABBITMQ_URL, BENCH_QUEUE, BENCH_PREFETCH, BENCH_DLX, BENCH_EVENT, BENCH_FIRST_NODE } = process.env;

class BenchEchoController {
  async echo(payload) {
    return { data: payload, scopeContext: 'echo' };
  }
}
// Plain JavaScript: the decorators applied by hand, exactly as TypeScript's emit would.
MessagePattern(BENCH_EVENT)(BenchEchoController.prototype, 'echo', Object.getOwnPropertyDescriptor(BenchEchoController.prototype, 'echo'));
Controller()(BenchEchoController);

class BenchEchoModule {}
Module({ controllers: [BenchEchoController] })(BenchEchoModule);

const transport = new AckAfterReplyTransport({
  url: RABBITMQ_URL,
  queue: BENCH_QUEUE,
  prefetch: Number(BENCH_PREFETCH),
  deadLetterExchange: BENCH_DLX,
  handlerTimeoutMs: 30_000,
  drainTimeoutMs: 3_000,
  logger: new Logger('BenchEchoTransport'),
  connectionName: 'naalya-bench-nest-echo',
  // On a cluster RABBITMQ_URL lists the nodes, as the server's does; the bench says which one to start on (the server's).
  firstNode: BENCH_FIRST_NODE === undefined ? undefined : Number(BENCH_FIRST_NODE),
  // As the server's tool transport: only the worker's broker user may publish (ignored by a transport without the option).
  requireUserId: brokerCredentialsOf(RABBITMQ_URL).user,
});
const app = await NestFactory.createMicroservice(BenchEchoModule, { strategy: transport, logger: ['error'] });
app.enableShutdownHooks(['SIGTERM']);
await app.listen();
process.send?.('ready');
