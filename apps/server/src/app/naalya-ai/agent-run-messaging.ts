import type { INestApplication } from '@nestjs/common';
import { AgentRunPublisher } from './dispatch/agent-run-publisher.service.js';
import { AgentRunIngest } from './events/agent-run-ingest.service.js';
import { DeadLetteredStepConsumer } from './events/dead-lettered-step.consumer.js';
import { RetentionPurge } from './lifecycle/retention-purge.service.js';
import { RunSweeper } from './lifecycle/run-sweeper.service.js';

/**
 * Connects run dispatch, run event ingest and the consumer of dead-lettered run steps to the broker (plain amqplib,
 * declared by the topology step), and starts the sweeper (it dispatches steps again) and the retention purge.
 * Started explicitly, like the tool transport, so that an app built for a test that needs neither connects to
 * nothing. Both close themselves in beforeApplicationShutdown: the ingest drains before the database closes.
 */
export const startAgentRunMessaging = async (app: INestApplication): Promise<void> => {
  await app.get(AgentRunPublisher).start();
  const sweeper = app.get(RunSweeper);
  const ingest = app.get(AgentRunIngest);
  // A worker's last event frees the thread: its next queued run starts now, not at the next sweep.
  ingest.onRunEnded((runId, threadId) => void sweeper.promote(runId, threadId).catch(() => undefined));
  await ingest.start();
  // A step the runs queue gave up on (past its delivery limit, or refused by a worker) fails its run.
  await app.get(DeadLetteredStepConsumer).start();
  sweeper.start();
  // Retention runs on every replica like the sweeper; it needs no broker, but starts with the rest so a test app that
  // connects nothing deletes nothing behind its back.
  app.get(RetentionPurge).start();
};
