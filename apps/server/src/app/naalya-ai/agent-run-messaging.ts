import type { INestApplication } from '@nestjs/common';
import { AgentRunPublisher } from './dispatch/agent-run-publisher.service.js';
import { AgentRunIngest } from './events/agent-run-ingest.service.js';

/**
 * Connects run dispatch and run event ingest to the broker (both plain amqplib, declared by the topology step).
 * Started explicitly, like the tool transport, so that an app built for a test that needs neither connects to
 * nothing. Both close themselves in beforeApplicationShutdown: the ingest drains before the database closes.
 */
export const startAgentRunMessaging = async (app: INestApplication): Promise<void> => {
  await app.get(AgentRunPublisher).start();
  await app.get(AgentRunIngest).start();
};
