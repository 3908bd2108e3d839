import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AckAfterReplyTransport,
  BROKER_CA_FILE_VARIABLE,
  ConfirmPublisher,
  RmqRpcClient,
  connectToAnyNode,
  declareTopology,
  rmqNames,
  type RmqNames,
} from '@naalya/rmq';
import { RmqCluster } from '@naalya/rmq/cluster';
import { createTestStack, freePort, makeTestCertificates, type TestCertificates } from '@naalya/test-stack';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/index.js';

// amqps:// against a real TLS listener: one throwaway RabbitMQ node (tools/cluster/rmq-cluster.sh, NODE_COUNT=1) that
// speaks TLS only (`listeners.tcp = none`), with a certificate for localhost and 127.0.0.1 from a CA the test makes, on
// 127.0.0.1 and 127.0.0.2 (the second address reaches the node under a name the certificate does not carry). Every
// check goes through libs/rmq's own paths, where RABBITMQ_CA_FILE is read (brokerTlsOptions): connectToAnyNode (the
// topology, the health probe) and RecoveringConnection (the RPC client, its ack-after-reply server side, the confirm
// publisher), then the built server and worker. In `npm run test:cluster`, whose run-cluster.mjs stops the node by its
// PID file if this file does not.

const TLS_PORT = Number(process.env['RMQ_TLS_PORT'] ?? 5711);
const DIST_PORT = Number(process.env['RMQ_TLS_DIST_PORT'] ?? 25711);
const CONNECT_MS = 10_000;

// Under run-cluster.mjs, inside the directory it cleans up by PID whatever happens; alone, a directory of its own.
const clusterBase = process.env['RMQ_CLUSTER_BASE'];
const dir = clusterBase ? join(clusterBase, 'tls') : mkdtempSync(join(tmpdir(), 'naalya-rmq-tls-'));
mkdirSync(join(dir, 'certs'), { recursive: true });

const url = (host = 'localhost') => `amqps://guest:guest@${host}:${TLS_PORT}`;
const SILENT = { log: () => undefined, warn: () => undefined, error: () => undefined };
const FAST_RECONNECT = { initialDelayMs: 100, maxDelayMs: 500 };

let node: RmqCluster;
let certificates: TestCertificates;
let otherCa: TestCertificates;
let names: RmqNames;
let transport: AckAfterReplyTransport | undefined;
const callerCaFile = process.env[BROKER_CA_FILE_VARIABLE];

const rpcClient = (brokerUrl: string, firstNode?: number) =>
  new RmqRpcClient({ url: brokerUrl, firstNode, exchange: names.toolsExchange, routingKey: names.toolsQueue, reconnect: FAST_RECONNECT });

/** Whether an RPC client on `brokerUrl` connects within `timeoutMs`: it is closed either way. */
const rpcConnect = async (brokerUrl: string, timeoutMs = 3_000) => {
  const client = rpcClient(brokerUrl);
  try {
    await client.connect(timeoutMs);
  } finally {
    await client.close();
  }
};

const connectOnce = async (brokerUrl: string, socketOptions: Record<string, unknown> = {}, start?: number) => {
  const connection = await connectToAnyNode(brokerUrl, { timeout: CONNECT_MS, ...socketOptions }, start);
  await connection.close();
};

beforeAll(async () => {
  certificates = makeTestCertificates(join(dir, 'certs'));
  otherCa = makeTestCertificates(join(dir, 'certs'), 'other-');
  node = new RmqCluster({
    base: dir,
    nodes: 1,
    distBase: DIST_PORT - 1,
    nodePrefix: 'tls',
    config: [
      // TLS only: no plain AMQP listener, so nothing below can have connected without TLS (the sabotage checks it).
      'listeners.tcp = none',
      `listeners.ssl.1 = 127.0.0.1:${TLS_PORT}`,
      `listeners.ssl.2 = 127.0.0.2:${TLS_PORT}`,
      `ssl_options.cacertfile = ${certificates.caFile}`,
      `ssl_options.certfile = ${certificates.certFile}`,
      `ssl_options.keyfile = ${certificates.keyFile}`,
      // The broker does not ask the clients for certificates: they log in with a password, as the apps do.
      'ssl_options.verify = verify_none',
      'ssl_options.fail_if_no_peer_cert = false',
    ],
  });
  await node.up(120_000);
  process.env[BROKER_CA_FILE_VARIABLE] = certificates.caFile;
  names = rmqNames(`agent-tools-tls-${randomUUID().slice(0, 8)}`, `agent-runs-tls-${randomUUID().slice(0, 8)}`);
  await declareTopology(url(), names);
  // The server side of the RPC calls, for every test: it reads RABBITMQ_CA_FILE once, when it connects, here.
  const server = new AckAfterReplyTransport({
    url: url(),
    queue: names.toolsQueue,
    prefetch: 4,
    deadLetterExchange: names.deadLetterExchange,
    handlerTimeoutMs: 5_000,
    drainTimeoutMs: 1_000,
    reconnect: FAST_RECONNECT,
    logger: SILENT,
  });
  server.addHandler('echo', async (data: unknown) => ({ echoed: data }), false);
  await new Promise<void>((resolve, reject) => server.listen((error?: unknown) => (error ? reject(error as Error) : resolve())));
  transport = server;
});

afterAll(async () => {
  await transport?.close();
  if (callerCaFile === undefined) delete process.env[BROKER_CA_FILE_VARIABLE];
  else process.env[BROKER_CA_FILE_VARIABLE] = callerCaFile;
  try {
    await node?.down();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Each test starts from the test CA; the negative ones change the variable for themselves.
beforeEach(() => {
  process.env[BROKER_CA_FILE_VARIABLE] = certificates.caFile;
});

describe('RabbitMQ over TLS (amqps://) with RABBITMQ_CA_FILE', () => {
  it('the RPC client, its ack-after-reply server side and a confirm publisher work over amqps:// with the CA RABBITMQ_CA_FILE names', async () => {
    const client = rpcClient(url());
    const publisher = new ConfirmPublisher({
      url: url(),
      what: `publishing to "${names.runsQueue}"`,
      logger: SILENT,
      recovery: { initialDelay: 100, maxDelay: 500 },
      check: (channel) => channel.checkQueue(names.runsQueue),
      confirmTimeoutMs: 10_000,
    });
    try {
      await client.connect(CONNECT_MS);
      expect(await client.call('echo', { over: 'tls' }, 5_000)).toEqual({ echoed: { over: 'tls' } });
      await publisher.start();
      const step = Buffer.from(JSON.stringify({ step: randomUUID() }));
      await publisher.publish('', names.runsQueue, step);
      // The confirmed message is in the queue, read back through connectToAnyNode, over TLS as well.
      const reader = await connectToAnyNode(url(), { timeout: CONNECT_MS });
      try {
        const channel = await reader.createChannel();
        const message = await channel.get(names.runsQueue, { noAck: true });
        expect(message && message.content.toString()).toBe(step.toString());
      } finally {
        await reader.close();
      }
    } finally {
      await client.close();
      await publisher.close();
    }
  });

  it('refuses a broker whose certificate another CA signed, and without RABBITMQ_CA_FILE (the system CAs do not know the test CA)', async () => {
    const untrusted = /self[- ]signed certificate|unable to (verify|get local issuer)/;
    process.env[BROKER_CA_FILE_VARIABLE] = otherCa.caFile;
    await expect(connectOnce(url())).rejects.toThrow(untrusted);
    await expect(rpcConnect(url())).rejects.toThrow(untrusted);
    delete process.env[BROKER_CA_FILE_VARIABLE];
    await expect(connectOnce(url())).rejects.toThrow(untrusted);
    await expect(rpcConnect(url())).rejects.toThrow(untrusted);
  });

  it('refuses a URL naming a host the certificate does not name (127.0.0.2, where the node listens too)', async () => {
    // The certificate names localhost and 127.0.0.1: by the second the connection is made, so the refusal below is the
    // name's, not the listener's.
    await connectOnce(url('127.0.0.1'));
    const wrongHost = /IP: 127\.0\.0\.2 is not in the cert's list/;
    await expect(connectOnce(url('127.0.0.2'))).rejects.toThrow(wrongHost);
    await expect(rpcConnect(url('127.0.0.2'))).rejects.toThrow(wrongHost);
  });

  it("an unreadable RABBITMQ_CA_FILE fails every client at once with the variable's name", async () => {
    const missing = join(dir, 'certs', 'missing-ca.pem');
    process.env[BROKER_CA_FILE_VARIABLE] = missing;
    const unreadable = `${BROKER_CA_FILE_VARIABLE} names a file that cannot be read (${missing})`;
    await expect(connectOnce(url())).rejects.toThrow(unreadable);
    // At once, not after the connect timeout's retries: a configuration error is not a broker that is down.
    const started = Date.now();
    await expect(rpcConnect(url(), 30_000)).rejects.toThrow(unreadable);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('a node list whose first node is a dead plain one fails over to the TLS node', async () => {
    // A port nothing listens on: the first node is down.
    const dead = `amqp://guest:guest@127.0.0.1:${await freePort()}`;
    const list = `${dead},${url()}`;
    await connectOnce(list, {}, 0);
    const client = rpcClient(list, 0);
    try {
      await client.connect(CONNECT_MS);
      expect(await client.call('echo', { after: 'failover' }, 5_000)).toEqual({ echoed: { after: 'failover' } });
    } finally {
      await client.close();
    }
  });

  it('sabotage: plain AMQP to the TLS port is refused, so the checks above ran over TLS', async () => {
    await expect(connectOnce(`amqp://guest:guest@127.0.0.1:${TLS_PORT}`, { timeout: 5_000 })).rejects.toThrow(/closed|ECONNRESET|ETIMEDOUT/);
  });

  it('the built server and worker, given an amqps:// RABBITMQ_URL and RABBITMQ_CA_FILE, set up the broker and become ready', async () => {
    // rmq-setup declares the queues over TLS; the server is ready when its tool transport is connected, and its /ready
    // reads the dead-letter depths through connectToAnyNode; the worker is ready when it consumes the runs queue.
    const env = { RABBITMQ_URL: url(), [BROKER_CA_FILE_VARIABLE]: certificates.caFile };
    const stack = await createTestStack({ name: 'tls', env });
    try {
      const server = await stack.startServer();
      // Ready already; the depths come from a connection /ready opens at its first call, so a later call reports them.
      let depths: Array<number | null> = [];
      await waitFor(
        async () => {
          const response = await fetch(`${server.baseUrl}/ready`, { signal: AbortSignal.timeout(5_000) });
          const body = (await response.json()) as { broker: string; deadLetters: Record<string, number | null> };
          depths = Object.values(body.deadLetters);
          return response.ok && body.broker === 'up' && depths.length > 0 && depths.every((depth) => depth !== null);
        },
        15_000,
        "the server's /ready with the broker up and both dead-letter depths",
      );
      expect(depths).toEqual([0, 0]);
      const worker = await stack.startWorker();
      expect(worker.output()).toContain('Worker ready');
    } finally {
      await stack.teardown();
    }
  });
});
