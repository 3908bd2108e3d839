import { randomBytes } from 'node:crypto';
import { declareTopology, deleteTopology, rmqNames, runsDeadLetterQueue } from '@naalya/rmq';
import { connect, type ChannelModel, type ConfirmChannel } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import type { ServerConfig } from '../config/server-config.js';
import { BrokerStatus } from './broker-status.js';
import { DeadLetterDepths } from './dead-letter-depths.js';

const RMQ_URL = process.env['RMQ_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const suffix = randomBytes(4).toString('hex');
const names = rmqNames(`agent-tools-test-${suffix}`, `agent-runs-test-${suffix}`);
const runsDeadLetters = runsDeadLetterQueue(names);

let testApp: TestApp;
let connection: ChannelModel;
let channel: ConfirmChannel;

const ready = async () => {
  const response = await fetch(`${await testApp.app.getUrl()}/ready`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  await declareTopology(RMQ_URL, names, { deadLetterMaxLength: 50 });
  connection = await connect(RMQ_URL);
  connection.on('error', () => undefined);
  channel = await connection.createConfirmChannel();
  testApp = await createTestApp({ RABBITMQ_URL: RMQ_URL, AGENT_TOOLS_QUEUE: names.toolsQueue, AGENT_RUNS_QUEUE: names.runsQueue });
});

afterAll(async () => {
  await testApp?.close();
  await connection?.close().catch(() => undefined);
  await deleteTopology(RMQ_URL, names);
});

describe('/ready', () => {
  it("reports how many messages wait in each dead-letter queue, and stays ready however deep they are (full, even)", async () => {
    // As the tool transport reports once connected (this test app starts no transport).
    testApp.app.get(BrokerStatus).report(true);
    for (let index = 0; index < 50; index += 1) channel.publish(names.deadLetterExchange, '', Buffer.from('{}'));
    for (let index = 0; index < 3; index += 1) channel.sendToQueue(runsDeadLetters, Buffer.from('{}'));
    await channel.waitForConfirms();

    expect(await ready()).toEqual({
      status: 200,
      body: { status: 'ready', database: 'up', broker: 'up', deadLetters: { [names.deadLetterQueue]: 50, [runsDeadLetters]: 3 } },
    });

    await channel.purgeQueue(names.deadLetterQueue);
    expect((await ready()).body['deadLetters']).toEqual({ [names.deadLetterQueue]: 0, [runsDeadLetters]: 3 });
  });

  it('still reports the depths when the server is not ready', async () => {
    testApp.app.get(BrokerStatus).report(false);

    expect(await ready()).toMatchObject({
      status: 503,
      body: { status: 'not ready', database: 'up', broker: 'down', deadLetters: { [names.deadLetterQueue]: 0, [runsDeadLetters]: 3 } },
    });
    testApp.app.get(BrokerStatus).report(true);
  });
});

describe('DeadLetterDepths', () => {
  const depthsFor = (overrides: Partial<ServerConfig>) =>
    new DeadLetterDepths({ RABBITMQ_URL: RMQ_URL, AGENT_TOOLS_QUEUE: names.toolsQueue, AGENT_RUNS_QUEUE: names.runsQueue, ...overrides } as ServerConfig);

  it('reports null for a queue the broker does not have, and the count of the other', async () => {
    const depths = depthsFor({ AGENT_RUNS_QUEUE: `agent-runs-missing-${suffix}` });
    try {
      expect(await depths.read()).toEqual({ [names.deadLetterQueue]: 0, [`agent-runs-missing-${suffix}.dead-letter`]: null });
    } finally {
      await depths.beforeApplicationShutdown();
    }
  });

  it('reports null for both, at once, when the broker cannot be reached, and reads again once it can', async () => {
    const depths = depthsFor({ RABBITMQ_URL: 'amqp://guest:guest@127.0.0.1:1' });
    const started = Date.now();
    expect(await depths.read()).toEqual({ [names.deadLetterQueue]: null, [runsDeadLetters]: null });
    expect(Date.now() - started).toBeLessThan(1_500);

    const reachable = depthsFor({});
    try {
      expect(await reachable.read()).toEqual({ [names.deadLetterQueue]: 0, [runsDeadLetters]: 3 });
      // The connection is kept and reused; one that goes is opened again at the next read.
      const kept = (reachable as unknown as { connection: Promise<ChannelModel> | null }).connection;
      expect(await reachable.read()).toEqual({ [names.deadLetterQueue]: 0, [runsDeadLetters]: 3 });
      expect((reachable as unknown as { connection: Promise<ChannelModel> | null }).connection).toBe(kept);
      if (!kept) throw new Error('No connection was kept.');
      await (await kept).close();
      expect(await reachable.read()).toEqual({ [names.deadLetterQueue]: 0, [runsDeadLetters]: 3 });
    } finally {
      await reachable.beforeApplicationShutdown();
    }
  });
});
