import { randomUUID } from 'node:crypto';
import { AGENT_RUN_PATTERN, type AgentRunRequest } from '@naalya/agent-tools';
import {
  MESSAGE_SIGNATURE_HEADER,
  brokerCredentialsOf,
  declareTopology,
  deleteTopology,
  generateMessageSigningKeyPair,
  parseMessageVerifyingKeys,
  verifyMessage,
} from '@naalya/rmq';
import { connect, type Channel, type ChannelModel, type GetMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../core/config/server-config.js';
import { RMQ_URL, testRmqNames } from '../fixtures/agent-run-test-kit.js';
import { AgentRunPublisher } from './agent-run-publisher.service.js';

const names = testRmqNames();
const keys = generateMessageSigningKeyPair('pub-test');
let connection: ChannelModel;
let channel: Channel;
let publisher: AgentRunPublisher;

// The publisher reads only the broker, the queue names and its key.
const config = {
  RABBITMQ_URL: RMQ_URL,
  AGENT_TOOLS_QUEUE: names.toolsQueue,
  AGENT_RUNS_QUEUE: names.runsQueue,
  RUN_SIGNING_KEY: keys.privateKey,
} as ServerConfig;

const request = (): AgentRunRequest => ({
  kind: 'start',
  message: 'list departments',
  context: {
    userDetails: { id: randomUUID(), userType: 'staff', schoolId: randomUUID(), campusId: null, fullName: 'Ada Nakato', email: 'ada@school.example' },
    runMode: { mode: 'school' },
    run: { runId: randomUUID(), threadId: randomUUID() },
    userPermissions: [],
    capabilities: { isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: false },
    dispatchToken: 'opaque',
  },
});

const take = async (): Promise<GetMessage> => {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const message = await channel.get(names.runsQueue, { noAck: true });
    if (message) return message;
    if (Date.now() > deadline) throw new Error('no run step on the queue');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

beforeAll(async () => {
  await declareTopology(RMQ_URL, names);
  connection = await connect(RMQ_URL);
  channel = await connection.createChannel();
  publisher = new AgentRunPublisher(config);
  await publisher.start();
});

afterAll(async () => {
  await publisher?.beforeApplicationShutdown();
  await connection?.close();
  await deleteTopology(RMQ_URL, names);
});

describe('AgentRunPublisher', () => {
  it("publishes each step with the server's broker user_id and an Ed25519 signature of its exact body by RUN_SIGNING_KEY", async () => {
    const sent = request();
    await publisher.publish(sent);

    const message = await take();
    expect(message.properties.userId).toBe(brokerCredentialsOf(RMQ_URL).user);
    const header = message.properties.headers?.[MESSAGE_SIGNATURE_HEADER];
    expect(header).toMatch(/^pub-test\./);
    expect(verifyMessage(message.content, header, parseMessageVerifyingKeys(keys.publicKey))).toEqual({ ok: true, kid: 'pub-test' });
    expect(JSON.parse(message.content.toString('utf8'))).toMatchObject({ pattern: AGENT_RUN_PATTERN, data: { kind: 'start', message: 'list departments' } });
    // Another pair's public key does not verify it.
    expect(verifyMessage(message.content, header, parseMessageVerifyingKeys(generateMessageSigningKeyPair('pub-test').publicKey))).toMatchObject({ ok: false });
  });
});
