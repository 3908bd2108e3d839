import { spawn } from 'node:child_process';
import { DIRECT_REPLY_TO, runEventsIngestQueue, runsDeadLetterQueue, type RmqNames } from './rmq-names.js';
import { declareTopology, type QueueMigration, type RmqTopologyOptions } from './rmq-topology.js';
import { firstBrokerUrl } from './broker-nodes.js';

/**
 * The name permissions give the default exchange: a publish to exchange "" (a reply to a direct reply-to address, or
 * `sendToQueue`) is checked as a write to `amq.default`. Whoever may write it may put a message on any queue.
 */
export const DEFAULT_EXCHANGE = 'amq.default';

/** RabbitMQ's three permission regexes, matched against the name of the exchange or queue an operation touches. */
export type BrokerPermissions = { configure: string; write: string; read: string };

/** Matches no name at all (RabbitMQ's own idiom for "none"); server-named queues get an `amq.gen-` name, not "". */
export const NO_NAMES = '^$';

const FULL_ACCESS: BrokerPermissions = { configure: '.*', write: '.*', read: '.*' };

const escapeRegex = (name: string): string => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Exactly these names: RabbitMQ matches permission regexes unanchored, and queue names are full of regex dots. */
export const onlyNames = (...names: string[]): string => `^(${names.map(escapeRegex).join('|')})$`;

/**
 * Least privilege for each runtime user, from the configured names. Neither may configure anything: the setup declares
 * the topology once, as the admin, and the apps only check it.
 *
 * - The server reads the tools queue, the run events it ingests and the run steps dead-lettered back to it (it fails
 *   their runs), and writes only the default exchange: that is how it answers a direct reply-to address and how it
 *   puts runs on the runs queue. It reads the dead-letter queues' depth with a passive declare, which needs no
 *   permission at all.
 * - The worker writes only the tools exchange (so its calls reach the tools queue and nothing else) and the run events
 *   exchange, and reads the runs queue and its direct reply-to. It cannot write the default exchange, so it cannot
 *   publish a reply or put anything on a queue directly, and it cannot read the tools queue.
 *
 * RabbitMQ 3.10 does not check the read permission when a client consumes `amq.rabbitmq.reply-to` (verified); it is
 * listed so the rule says what the worker does, and so a broker that checks it still delivers the worker its replies.
 */
export const brokerPermissions = (names: RmqNames): { server: BrokerPermissions; worker: BrokerPermissions; mcp: BrokerPermissions } => ({
  server: {
    configure: NO_NAMES,
    write: onlyNames(DEFAULT_EXCHANGE),
    read: onlyNames(names.toolsQueue, runEventsIngestQueue(names), runsDeadLetterQueue(names)),
  },
  worker: {
    configure: NO_NAMES,
    write: onlyNames(names.toolsExchange, names.runEventsExchange),
    read: onlyNames(names.runsQueue, DIRECT_REPLY_TO),
  },
  // The MCP door: tool calls out through the tools exchange and their replies on direct reply-to, nothing else (no run
  // steps, no run events). Its own user, so the server can tell its calls from the worker's and audit them as "mcp".
  mcp: {
    configure: NO_NAMES,
    write: onlyNames(names.toolsExchange),
    read: onlyNames(DIRECT_REPLY_TO),
  },
});

export type BrokerCredentials = { user: string; password: string; vhost: string };

/** As amqplib reads an amqp:// URL: no user means guest/guest, an empty or "/" path the vhost "/". */
export const brokerCredentialsOf = (amqpUrl: string): BrokerCredentials => {
  // A list of nodes shares one user, password and vhost (parseBrokerUrls checks): the first entry says them.
  const url = new URL(firstBrokerUrl(amqpUrl));
  const path = url.pathname.replace(/^\//, '');
  return {
    user: url.username ? decodeURIComponent(url.username) : 'guest',
    password: url.username ? decodeURIComponent(url.password) : 'guest',
    vhost: path === '' ? '/' : decodeURIComponent(path),
  };
};

export type BrokerAccessInput = {
  /** Declares the topology: it gets every permission on the vhost. It must exist already (the broker's administrator). */
  adminUrl: string;
  /** The server's own user; created, or its password and permissions reset. */
  serverUrl: string;
  /** The worker's own user, likewise. */
  workerUrl: string;
  /** The MCP door's own user, likewise; without it no door user is set up. */
  mcpUrl?: string;
  names: RmqNames;
};

/** A RabbitMQ definitions document: what `rabbitmqctl import_definitions` and the management API's import both read. */
export type BrokerDefinitions = {
  vhosts: Array<{ name: string }>;
  users: Array<{ name: string; password: string; tags: string[] }>;
  permissions: Array<BrokerPermissions & { user: string; vhost: string }>;
};

/**
 * The vhost, the two runtime users and every permission, as one document: the single source both ways of applying it
 * read. Importing it again is harmless (vhosts, users and permissions are upserts), and resets a changed password or
 * permission. The runtime users get no tags, so they cannot use the management UI or API.
 */
export const brokerDefinitions = (input: BrokerAccessInput): BrokerDefinitions => {
  const admin = brokerCredentialsOf(input.adminUrl);
  const server = brokerCredentialsOf(input.serverUrl);
  const worker = brokerCredentialsOf(input.workerUrl);
  const mcp = input.mcpUrl === undefined ? undefined : brokerCredentialsOf(input.mcpUrl);
  const vhost = admin.vhost;
  const runtime = [['server', server], ['worker', worker], ...(mcp ? [['MCP door', mcp] as const] : [])] as const;
  for (const [role, credentials] of runtime) {
    if (credentials.vhost !== vhost) {
      throw new Error(`The ${role}'s broker URL names vhost "${credentials.vhost}", the admin URL "${vhost}": they must name the same vhost.`);
    }
  }
  const names = [admin.user, ...runtime.map(([, credentials]) => credentials.user)];
  if (new Set(names).size !== names.length) {
    throw new Error(`The admin, the server, the worker and the MCP door need different broker users, got ${names.join(', ')}.`);
  }
  const permissions = brokerPermissions(input.names);
  return {
    vhosts: [{ name: vhost }],
    users: runtime.map(([, { user, password }]) => ({ name: user, password, tags: [] })),
    permissions: [
      { user: admin.user, vhost, ...FULL_ACCESS },
      { user: server.user, vhost, ...permissions.server },
      { user: worker.user, vhost, ...permissions.worker },
      ...(mcp ? [{ user: mcp.user, vhost, ...permissions.mcp }] : []),
    ],
  };
};

/**
 * How the definitions reach the broker: `rabbitmqctl` next to a broker without the management plugin (this machine,
 * CI), or the management API's definitions import (`http://admin:password@host:15672`, as in docker-compose.yml).
 */
export type BrokerAdminApi = { kind: 'rabbitmqctl' } | { kind: 'management'; url: string };

const importWithRabbitmqctl = (definitions: BrokerDefinitions): Promise<void> =>
  new Promise((resolve, reject) => {
    // On stdin, so the passwords never land in a file or on a command line.
    const child = spawn('rabbitmqctl', ['-q', 'import_definitions', '--format', 'json'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', (error) => reject(new Error(`rabbitmqctl could not be run: ${error.message}`)));
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`rabbitmqctl import_definitions exited with ${code}: ${output.trim()}`)),
    );
    child.stdin.end(JSON.stringify(definitions));
  });

const importWithManagementApi = async (definitions: BrokerDefinitions, managementUrl: string): Promise<void> => {
  const url = new URL(managementUrl);
  // fetch refuses URLs that carry credentials: they travel as Basic auth instead.
  const authorization = `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString('base64')}`;
  url.username = '';
  url.password = '';
  const response = await fetch(new URL('api/definitions', url.href.endsWith('/') ? url : `${url.href}/`), {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(definitions),
  });
  if (!response.ok) throw new Error(`The management API refused the definitions: ${response.status} ${(await response.text()).slice(0, 300)}`);
};

export const importBrokerDefinitions = (definitions: BrokerDefinitions, via: BrokerAdminApi): Promise<void> =>
  via.kind === 'rabbitmqctl' ? importWithRabbitmqctl(definitions) : importWithManagementApi(definitions, via.url);

/**
 * Everything the apps need on the broker, idempotently: the vhost, each app's user with least privilege, then the
 * topology, declared by the admin (the runtime users may declare nothing). Resolves to the definitions applied and the
 * queues the topology had to declare again (see declareTopology).
 */
export const setupBroker = async (
  input: BrokerAccessInput,
  via: BrokerAdminApi,
  topology: RmqTopologyOptions = {},
): Promise<BrokerDefinitions & { migrations: QueueMigration[] }> => {
  const definitions = brokerDefinitions(input);
  await importBrokerDefinitions(definitions, via);
  const migrations = await declareTopology(input.adminUrl, input.names, topology);
  return { ...definitions, migrations };
};
