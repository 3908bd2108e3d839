import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** tools/cluster/rmq-cluster.sh, from this file (libs/rmq/src/cluster, or libs/rmq/dist/cluster once built: the same depth). */
const SCRIPT = resolve(import.meta.dirname, '../../../../tools/cluster/rmq-cluster.sh');

export type RmqClusterOptions = {
  /** Working directory of the nodes (config, cookie, data, pid files). */
  base: string;
  /** Node i listens on portBase + i (default 5680: 5681-5683). */
  portBase?: number;
  /** Node i's Erlang distribution port is distBase + i (default 25680). */
  distBase?: number;
  /** Node i is `${nodePrefix}i@localhost` (default r). */
  nodePrefix?: string;
  /** How many nodes (default 3): nodes 2.. join node 1. */
  nodes?: number;
  /**
   * rabbitmq.conf lines for every node, after the script's own (a TLS listener, `ssl_options.*`). Lines that set
   * `listeners.tcp` replace the plain listener on portBase + i (`listeners.tcp = none`: TLS only).
   */
  config?: string[];
};

/** A queue of a vhost as `rabbitmqctl list_queues` sees it: `leader` and `members` for quorum queues, `messages` ready + unacked. */
export type QueueLeader = { name: string; type: string; leader: string; members: string[]; messages: number };

/** A client connection to the cluster: its `connection_name` client property and the node (1-3) it is on. */
export type ClusterConnection = { name: string | undefined; node: number };

/**
 * Extra RabbitMQ nodes (three by default) for failover and TLS tests, `npm run test:cluster` and `npm run bench -- --cluster`
 * (as `@naalya/rmq/cluster`: test and bench code only, never in the package's index; built to dist/cluster so that the
 * bench, plain Node, can import it): started, killed and stopped through tools/cluster/rmq-cluster.sh, every step bounded
 * in time. Needs rabbitmq-server on this machine; the
 * machine's own node is never touched.
 */
export class RmqCluster {
  private readonly env: NodeJS.ProcessEnv;
  readonly portBase: number;
  readonly distBase: number;
  readonly nodePrefix: string;
  readonly base: string;
  readonly nodes: number;

  constructor(options: RmqClusterOptions) {
    this.base = options.base;
    this.portBase = options.portBase ?? 5680;
    this.distBase = options.distBase ?? 25680;
    this.nodePrefix = options.nodePrefix ?? 'r';
    this.nodes = options.nodes ?? 3;
    this.env = {
      ...process.env,
      BASE: options.base,
      PORT_BASE: String(this.portBase),
      DIST_BASE: String(this.distBase),
      NODE_PREFIX: this.nodePrefix,
      NODE_COUNT: String(this.nodes),
      EXTRA_CONF: (options.config ?? []).join('\n'),
    };
  }

  /** amqp://user:password@127.0.0.1:port for node 1..3 (guest may log in from loopback: loopback_users = none). */
  url(node: number, credentials = 'guest:guest'): string {
    return `amqp://${credentials}@127.0.0.1:${this.portBase + node}`;
  }

  /** The comma-separated list of every node, as RABBITMQ_URL takes it. */
  urls(credentials?: string): string {
    return Array.from({ length: this.nodes }, (_, index) => index + 1).map((node) => this.url(node, credentials)).join(',');
  }

  /** Boots the nodes and joins the others to 1 (three: about 23 s on an idle two-core machine, over a minute when busy). */
  async up(timeoutMs = 180_000): Promise<void> {
    await this.script(['up'], timeoutMs);
  }

  /** Stops every node this working directory started, by its recorded PID. */
  async down(timeoutMs = 90_000): Promise<void> {
    await this.script(['down'], timeoutMs);
  }

  /** kill -9 of node i's beam: the sockets reset at once, as when a node crashes. */
  async kill(node: number): Promise<void> {
    await this.script(['kill', String(node)], 10_000);
  }

  /** Starts node i again with its data: it rejoins the cluster. */
  async start(node: number, timeoutMs = 120_000): Promise<void> {
    await this.script(['start', String(node)], timeoutMs);
  }

  /** Which node leads each quorum queue of `vhost`, and how many messages each queue holds, asked of a node that is up. */
  async leaders(askNode: number, vhost = '/'): Promise<QueueLeader[]> {
    const stdout = await this.script(['ctl', String(askNode), 'list_queues', '-p', vhost, 'name', 'type', 'leader', 'members', 'messages', '--formatter', 'json'], 30_000);
    return JSON.parse(stdout) as QueueLeader[];
  }

  /** The OS pid of node i's Erlang VM (beam.smp), from the pid file the script keeps: for the CPU a bench charges to the broker. */
  async pid(node: number): Promise<number> {
    const pid = Number((await this.script(['pid', String(node)], 10_000)).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no pid recorded for ${this.nodePrefix}${node}`);
    return pid;
  }

  /**
   * Every client connection to the cluster and the node it is on (by the listener port it reached), asked of a node
   * that is up: where a process that was given the whole node list actually connected.
   */
  async connections(askNode: number): Promise<ClusterConnection[]> {
    const stdout = await this.script(['ctl', String(askNode), 'list_connections', 'port', 'client_properties', '--formatter', 'json'], 30_000);
    const rows = JSON.parse(stdout) as Array<{ port: number; client_properties: Array<[string, string, unknown]> }>;
    return rows.map((row) => {
      const name = row.client_properties.find(([key]) => key === 'connection_name')?.[2];
      return { name: typeof name === 'string' ? name : undefined, node: row.port - this.portBase };
    });
  }

  /**
   * A `rabbitmqctl` in `dir` that runs the real one against node `node` of this cluster, with its cookie and node
   * name: put `dir` first on PATH for a program that calls `rabbitmqctl` (the server's rmq-setup imports its users and
   * vhost that way), and it sets up this cluster, never the machine's own node.
   */
  rabbitmqctlShim(dir: string, node = 1): string {
    mkdirSync(dir, { recursive: true });
    const path = `${dir}/rabbitmqctl`;
    const env = Object.entries({ BASE: this.base, PORT_BASE: this.portBase, DIST_BASE: this.distBase, NODE_PREFIX: this.nodePrefix })
      .map(([name, value]) => `${name}='${String(value)}'`)
      .join(' ');
    writeFileSync(path, `#!/bin/sh\nexec env ${env} '${SCRIPT}' ctl ${node} "$@"\n`);
    chmodSync(path, 0o755);
    return path;
  }

  /** The number of the node named `r2@localhost`. */
  nodeNumber(nodeName: string): number {
    const match = new RegExp(`^${this.nodePrefix}(\\d+)@`).exec(nodeName);
    if (!match) throw new Error(`${nodeName} is not a node of this cluster`);
    return Number(match[1]);
  }

  private async script(args: string[], timeoutMs: number): Promise<string> {
    const { stdout } = await run(SCRIPT, args, { env: this.env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 4 * 1024 * 1024 });
    return stdout;
  }
}
