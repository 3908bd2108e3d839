import { connect, type ChannelModel, type Options } from 'amqplib';
import { brokerTlsOptions } from './broker-tls.js';

/**
 * RABBITMQ_URL may name several nodes of one cluster, separated by commas: every connection of the apps goes through
 * BrokerNodes, which hands amqplib the node to try next. amqplib's recovery re-runs its connect with the same `url`
 * argument on every attempt (channel_api.js `openModel`), so a string would bring a process back only to the node it
 * lost; an object whose fields are read afresh per attempt, advanced before each scheduled reconnection, walks the
 * list round-robin instead (reference/distributed/FINDINGS.md, "libs/rmq: one URL").
 */

/** Why one entry of a broker URL list is not usable: names its position (1-based), never its text (it holds a password). */
export class BrokerUrlListError extends Error {
  override readonly name = 'BrokerUrlListError';
}

/** One node, in the fields amqplib's object form of connect() reads (lib/connect.js), so nothing of the string is lost. */
export type BrokerNode = Options.Connect & {
  protocol: 'amqp' | 'amqps';
  hostname: string;
  port: number;
  /** `host:port`, for log lines and errors: never the credentials. */
  address: string;
};

const QUERY_FIELDS = ['frameMax', 'channelMax', 'heartbeat', 'locale'] as const;

const parseNode = (text: string, position: number, total: number): BrokerNode => {
  // Read after the variable's name: `RABBITMQ_URL entry 2 of 3 names no host`, `RABBITMQ_URL is not a URL`.
  const problem = (what: string) => new BrokerUrlListError(total > 1 ? `entry ${position} of ${total} ${what}` : what);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw problem('is not a URL (expected amqp://user:password@host:5672/vhost)');
  }
  if (url.protocol !== 'amqp:' && url.protocol !== 'amqps:') {
    throw problem(`must be an amqp:// or amqps:// URL (amqp://user:password@host:5672/vhost), not ${url.protocol}//`);
  }
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  if (!hostname) throw problem('names no host');
  const protocol = url.protocol === 'amqp:' ? 'amqp' : 'amqps';
  const port = url.port ? Number(url.port) : protocol === 'amqp' ? 5672 : 5671;
  const node: BrokerNode = {
    protocol,
    hostname,
    port,
    address: `${url.hostname}:${port}`,
    // As amqplib reads a string URL: no user and no password means guest/guest; its object form decodes nothing.
    ...(url.username === '' && url.password === '' ? {} : { username: decodeURIComponent(url.username), password: decodeURIComponent(url.password) }),
    // Still escaped: amqplib unescapes the object form's vhost itself (openFrames).
    vhost: url.pathname.slice(1),
  };
  for (const field of QUERY_FIELDS) {
    const value = url.searchParams.get(field);
    if (value === null) continue;
    if (field === 'locale') node.locale = value;
    else node[field] = Number(value);
  }
  return node;
};

/**
 * Parses a comma-separated list of amqp(s) URLs (one URL is a list of one). All must log in as the same user to the
 * same vhost: they are the nodes of one cluster, and the broker user is what the server checks on every message.
 */
export const parseBrokerUrls = (value: string): BrokerNode[] => {
  const entries = value.split(',').map((entry) => entry.trim());
  if (entries.length === 1 && entries[0] === '') throw new BrokerUrlListError('is empty (expected amqp://user:password@host:5672/vhost)');
  entries.forEach((entry, index) => {
    if (entry === '') throw new BrokerUrlListError(`entry ${index + 1} of ${entries.length} is empty`);
  });
  const nodes = entries.map((entry, index) => parseNode(entry, index + 1, entries.length));
  const first = nodes[0] as BrokerNode;
  nodes.forEach((node, index) => {
    if (node.username !== first.username || node.vhost !== first.vhost) {
      throw new BrokerUrlListError(`entry ${index + 1} of ${nodes.length} logs in as another user or to another vhost than entry 1: the nodes of one cluster share both`);
    }
  });
  return nodes;
};

/** The first URL of a list: for what reads the user, password or vhost, which every entry shares. */
export const firstBrokerUrl = (value: string): string => value.split(',')[0]?.trim() ?? value;

/** For a config schema: undefined when the value is a usable list, else the reason (position named, no password). */
export const brokerUrlListProblem = (value: string): string | undefined => {
  try {
    parseBrokerUrls(value);
    return undefined;
  } catch (error) {
    if (error instanceof BrokerUrlListError) return error.message;
    throw error;
  }
};

/** A random start, so the replicas of an app spread over the nodes instead of all landing on the first. */
const randomStart = (count: number): number => Math.floor(Math.random() * count);

/**
 * The nodes of one broker URL list and the one a connection tries next: round-robin, from a per-instance random
 * offset (or `start`, for tests). `target` is the object handed to amqplib: its fields read the current node.
 */
export class BrokerNodes {
  readonly nodes: readonly BrokerNode[];
  private index: number;

  constructor(urls: string, start?: number) {
    this.nodes = parseBrokerUrls(urls);
    this.index = (start ?? randomStart(this.nodes.length)) % this.nodes.length;
  }

  get current(): BrokerNode {
    return this.nodes[this.index] as BrokerNode;
  }

  /** Moves to the next node; called before every reconnection attempt. */
  advance(): BrokerNode {
    this.index = (this.index + 1) % this.nodes.length;
    return this.current;
  }

  /**
   * What amqplib's connect() gets: every field is a getter on the current node, read when an attempt starts, so the
   * recovery's next attempt goes wherever advance() has moved to.
   */
  readonly target: Options.Connect = ((): Options.Connect => {
    const target = {} as Options.Connect;
    for (const field of ['protocol', 'hostname', 'port', 'username', 'password', 'vhost', 'locale', 'frameMax', 'channelMax', 'heartbeat'] as const) {
      Object.defineProperty(target, field, { enumerable: true, get: () => this.current[field] });
    }
    return target;
  })();
}

/**
 * One connection for a short task (the setup, a health probe): tries each node once, in round-robin order from a
 * random one, and resolves with the first that accepts; the error names every node's reason (without credentials).
 */
export const connectToAnyNode = async (urls: string, socketOptions: Record<string, unknown> = {}, start?: number): Promise<ChannelModel> => {
  const nodes = new BrokerNodes(urls, start);
  // Every connection carries the TLS options (RABBITMQ_CA_FILE), as RecoveringConnection's do.
  const options = { ...brokerTlsOptions(), ...socketOptions };
  const failures: string[] = [];
  // One node: its own error, as a plain connect would give it.
  if (nodes.nodes.length === 1) return connect(urls.trim(), options);
  for (let tried = 0; tried < nodes.nodes.length; tried += 1) {
    const node = tried === 0 ? nodes.current : nodes.advance();
    try {
      // A copy, not the live target: concurrent short tasks must not move each other's node.
      const { address: _address, ...fields } = node;
      return await connect(fields, options);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      failures.push(`${node.address}: ${reason.replace(/\/\/[^/@\s"]*@/g, '//***@')}`);
    }
  }
  throw new Error(`no broker node accepted the connection (${failures.join('; ')})`);
};
