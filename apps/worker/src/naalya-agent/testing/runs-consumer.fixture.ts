import { AckAfterReplyTransport, type RmqNames } from '@naalya/rmq';
import type { INestMicroservice } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { AgentRunConsumer } from '../runs/agent-run.consumer.js';
import { AgentRunExecutor } from '../runs/agent-run.executor.js';
import { RunStepAuthenticity } from '../runs/run-step-authenticity.js';

/**
 * The worker's runs consumer as main.ts mounts it (the runs queue through AckAfterReplyTransport, acknowledged after
 * the step), around a given executor and step authentication: for the integration specs that publish steps to it.
 */
export const startRunsConsumer = async (options: {
  url: string;
  names: RmqNames;
  executor: AgentRunExecutor;
  authenticity: RunStepAuthenticity;
}): Promise<INestMicroservice> => {
  const moduleRef = await Test.createTestingModule({
    controllers: [AgentRunConsumer],
    providers: [
      { provide: AgentRunExecutor, useValue: options.executor },
      { provide: RunStepAuthenticity, useValue: options.authenticity },
    ],
  }).compile();
  const app = moduleRef.createNestMicroservice({
    strategy: new AckAfterReplyTransport({
      url: options.url,
      queue: options.names.runsQueue,
      prefetch: 2,
      deadLetterExchange: options.names.deadLetterExchange,
      handlerTimeoutMs: 15_000,
      drainTimeoutMs: 2_000,
    }),
    logger: false,
  });
  await app.listen();
  return app;
};
