import { declareTopology, rmqNames } from '@naalya/rmq';
import { ConfigError, loadServerConfig } from '../app/core/config/server-config.js';

// The one place queues and exchanges are declared with their arguments; clients connect with noAssert.
try {
  const config = loadServerConfig();
  const names = rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE);
  await declareTopology(config.RABBITMQ_URL, names);
  console.log(`Broker ready: queues "${names.toolsQueue}", "${names.runsQueue}", dead letters in "${names.deadLetterQueue}".`);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : `Broker setup failed: ${(error as Error).message}`);
  process.exit(1);
}
