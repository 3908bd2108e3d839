import { randomUUID } from 'node:crypto';
import { AGENT_THREAD_DELETED_PATTERN } from '@naalya/agent-tools';
import { emptyCheckpoint } from '@langchain/langgraph-checkpoint';
import {
  AckAfterReplyTransport,
  MESSAGE_SIGNATURE_HEADER,
  declareTopology,
  deleteTopology,
  generateMessageSigningKeyPair,
  parseMessageSigningKey,
  parseMessageVerifyingKeys,
  rmqNames,
  signMessage,
} from '@naalya/rmq';
import type { INestMicroservice } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { connect, type ChannelModel, type ConfirmChannel } from 'amqplib';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CheckpointStore } from '../core/checkpoint/checkpoint-store.js';
import { CHECKPOINT_OWNER_URL, CHECKPOINT_ROLE_URL, createCheckpointSchema } from '../testing/checkpoint-role.fixture.js';
import { RunStepAuthenticity } from './run-step-authenticity.js';
import { ThreadDeletionConsumer } from './thread-deletion.consumer.js';

const RABBITMQ_URL = process.env['RABBITMQ_TEST_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const suffix = randomUUID().slice(0, 8);
const names = rmqNames(`agent-tools-test-${suffix}`, `agent-runs-test-${suffix}`);
const SERVER_KEY = generateMessageSigningKeyPair('server');
const OTHER_KEY = generateMessageSigningKeyPair('server');

// A checkpoint schema of this file's own, reached by a login role that owns only it (as naalya_checkpoint).
const schema = `agent_checkpoints_deletion_${suffix}`;

let admin: pg.Client;
let store: CheckpointStore;
let worker: INestMicroservice;
let connection: ChannelModel;
let channel: ConfirmChannel;

const putCheckpoint = async (threadId: string) => {
  // A channel value with a new version, so the saver stores a blob as well as the checkpoint.
  const checkpoint = { ...emptyCheckpoint(), id: randomUUID(), ts: new Date().toISOString(), channel_values: { messages: ['hi'] }, channel_versions: { messages: 1 } };
  const config = await store.saver.put({ configurable: { thread_id: threadId, checkpoint_ns: '' } }, checkpoint, { source: 'input', step: -1, parents: {} }, { messages: 1 });
  // A pending write as well, so all three of the saver's tables hold rows of the thread.
  await store.saver.putWrites(config, [['messages', 'hello']], randomUUID());
};
const rowsOf = async (threadId: string) => {
  const counts: Record<string, number> = {};
  for (const table of ['checkpoints', 'checkpoint_blobs', 'checkpoint_writes']) {
    const { rows } = await admin.query<{ count: number }>(`SELECT count(*)::int AS count FROM "${schema}".${table} WHERE thread_id = $1`, [threadId]);
    counts[table] = rows[0].count;
  }
  return counts;
};

/** As the server's AgentRunPublisher publishes it: user_id of its broker user, body signed by its run signing key. */
const publishDeletion = async (threadId: string, options: { signWith?: string | null } = {}) => {
  const body = Buffer.from(JSON.stringify({ pattern: AGENT_THREAD_DELETED_PATTERN, data: { threadId } }));
  const signWith = options.signWith === undefined ? SERVER_KEY.privateKey : options.signWith;
  const headers = signWith === null ? {} : { [MESSAGE_SIGNATURE_HEADER]: signMessage(body, parseMessageSigningKey(signWith)) };
  channel.sendToQueue(names.runsQueue, body, { userId: 'guest', headers, persistent: true });
  await channel.waitForConfirms();
};

const waitFor = async (check: () => Promise<boolean>, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

beforeAll(async () => {
  admin = new pg.Client({ connectionString: CHECKPOINT_OWNER_URL });
  await admin.connect();
  await createCheckpointSchema(admin, schema);
  store = new CheckpointStore({ databaseUrl: CHECKPOINT_ROLE_URL, schema, retentionDays: 30, sweepIntervalMs: 3_600_000, poolSize: 2 });
  await store.onModuleInit();

  await declareTopology(RABBITMQ_URL, names);
  connection = await connect(RABBITMQ_URL);
  channel = await connection.createConfirmChannel();
  const moduleRef = await Test.createTestingModule({
    controllers: [ThreadDeletionConsumer],
    providers: [
      { provide: CheckpointStore, useValue: store },
      { provide: RunStepAuthenticity, useValue: new RunStepAuthenticity({ serverBrokerUser: 'guest', publicKeys: parseMessageVerifyingKeys(SERVER_KEY.publicKey) }) },
    ],
  }).compile();
  worker = moduleRef.createNestMicroservice({
    // Prefetch 1: messages are handled in the order published, so once the last one is done, so are the ones before.
    strategy: new AckAfterReplyTransport({
      url: RABBITMQ_URL,
      queue: names.runsQueue,
      prefetch: 1,
      deadLetterExchange: names.deadLetterExchange,
      handlerTimeoutMs: 10_000,
      drainTimeoutMs: 2_000,
      replies: false,
    }),
    logger: false,
  });
  await worker.listen();
});

afterAll(async () => {
  await worker?.close();
  await connection?.close().catch(() => undefined);
  await deleteTopology(RABBITMQ_URL, names);
  // The store was the module's provider: closing the microservice ran its onModuleDestroy (which ends its pool).
  await admin?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin?.end();
});

describe('ThreadDeletionConsumer: a deleted thread\'s checkpoints go, and only on the server\'s signed word', () => {
  it('deletes every checkpoint row of the thread named by a signed message, and no other thread\'s', async () => {
    const [deleted, other] = [randomUUID(), randomUUID()];
    await putCheckpoint(deleted);
    await putCheckpoint(other);
    expect(Object.values(await rowsOf(deleted)).every((count) => count > 0)).toBe(true);

    await publishDeletion(deleted);

    await waitFor(async () => (await rowsOf(deleted))['checkpoints'] === 0);
    expect(await rowsOf(deleted)).toEqual({ checkpoints: 0, checkpoint_blobs: 0, checkpoint_writes: 0 });
    expect(Object.values(await rowsOf(other)).every((count) => count > 0)).toBe(true);
  });

  it('drops a deletion that is unsigned or signed by a key the worker does not hold: the thread\'s checkpoints stay', async () => {
    const [target, marker] = [randomUUID(), randomUUID()];
    await putCheckpoint(target);
    await putCheckpoint(marker);
    const before = await rowsOf(target);

    await publishDeletion(target, { signWith: null });
    await publishDeletion(target, { signWith: OTHER_KEY.privateKey });
    // A genuine deletion of another thread, published last: once it is done, the two forgeries were handled before it.
    await publishDeletion(marker);
    await waitFor(async () => (await rowsOf(marker))['checkpoints'] === 0);

    expect(await rowsOf(target)).toEqual(before);
  });
});
