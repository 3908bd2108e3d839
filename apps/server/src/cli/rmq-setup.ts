import { brokerCredentialsOf, declareTopology, rmqNames, runsDeadLetterQueue, setupBroker, type BrokerAdminApi, type RmqTopologyOptions } from '@naalya/rmq';
import { ConfigError, loadServerConfig } from '../app/core/config/server-config.js';

// The one place the broker is set up: the vhost, each app's user with least privilege, and the queues and exchanges
// with their arguments, declared by the admin (the apps' users may declare nothing; they connect and only check).
//
// RABBITMQ_ADMIN_URL (an administrator on the apps' vhost) and WORKER_RABBITMQ_URL (the worker's own URL, whose user
// and password are created here) come from `npm run rmq:setup`, `npm start` and `npm run demo`. Without the admin URL
// only the topology is declared, as RABBITMQ_URL's user: for a broker whose users are managed elsewhere, and for tests.
// RABBITMQ_MANAGEMENT_URL (http://admin:password@host:15672) applies the users through the management API instead of
// rabbitmqctl, for a broker on another machine (docker-compose.yml).
//
// A queue an older release declared with other arguments (the classic runs queue before it became a quorum queue with a
// delivery limit, an unbounded dead-letter queue) is deleted and declared again, with a line saying how many messages
// went; running the setup again then changes nothing.
try {
  const config = loadServerConfig();
  // RABBITMQ_QUEUE_TYPE=quorum on a cluster: switching it migrates the queues as above (the ingest queue once empty).
  const topology: RmqTopologyOptions = { queueType: config.RABBITMQ_QUEUE_TYPE, log: (line) => console.log(line) };
  const names = rmqNames(config.AGENT_TOOLS_QUEUE, config.AGENT_RUNS_QUEUE);
  const adminUrl = process.env['RABBITMQ_ADMIN_URL'] || undefined;
  if (adminUrl === undefined) {
    await declareTopology(config.RABBITMQ_URL, names, topology);
    console.log(`Broker ready (topology only, no RABBITMQ_ADMIN_URL): ${config.RABBITMQ_QUEUE_TYPE} queues "${names.toolsQueue}", "${names.runsQueue}".`);
  } else {
    const workerUrl = process.env['WORKER_RABBITMQ_URL'];
    if (!workerUrl) throw new ConfigError('WORKER_RABBITMQ_URL is missing: the worker\'s RABBITMQ_URL, whose user the setup creates.');
    const worker = brokerCredentialsOf(workerUrl).user;
    if (worker !== config.WORKER_BROKER_USER) {
      throw new ConfigError(`WORKER_BROKER_USER is "${config.WORKER_BROKER_USER}" but the worker's RABBITMQ_URL connects as "${worker}": the server would refuse every tool call.`);
    }
    // The MCP door's user is the server's own configuration (the door runs in the server), created here like the worker's.
    const mcpUrl = config.MCP_RABBITMQ_URL;
    if (mcpUrl && brokerCredentialsOf(mcpUrl).user !== config.MCP_BROKER_USER) {
      throw new ConfigError(`MCP_BROKER_USER is "${config.MCP_BROKER_USER}" but MCP_RABBITMQ_URL connects as "${brokerCredentialsOf(mcpUrl).user}": the server would refuse every call through the door.`);
    }
    const managementUrl = process.env['RABBITMQ_MANAGEMENT_URL'] || undefined;
    const via: BrokerAdminApi = managementUrl ? { kind: 'management', url: managementUrl } : { kind: 'rabbitmqctl' };
    const definitions = await setupBroker({ adminUrl, serverUrl: config.RABBITMQ_URL, workerUrl, mcpUrl, names }, via, topology);
    const users = definitions.users.map((user) => user.name).join('", "');
    console.log(
      `Broker ready: vhost "${definitions.vhosts[0]?.name}", users "${users}", queues "${names.toolsQueue}" (through "${names.toolsExchange}"), "${names.runsQueue}", dead letters in "${names.deadLetterQueue}" and "${runsDeadLetterQueue(names)}".`,
    );
  }
} catch (error) {
  // Connection errors carry the URL: its password is masked.
  const message = error instanceof ConfigError ? error.message : `Broker setup failed: ${(error as Error).message}`;
  console.error(message.replace(/\/\/[^/@\s"]*@/g, '//***@'));
  process.exit(1);
}
