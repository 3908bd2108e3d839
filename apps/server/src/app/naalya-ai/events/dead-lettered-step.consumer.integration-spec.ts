import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { Logger } from '@nestjs/common';
import { AGENT_RUN_PATTERN } from '@naalya/agent-tools';
import { declareTopology, deleteTopology, rmqNames, runsDeadLetterQueue } from '@naalya/rmq';
import { connect, type ChannelModel, type ConfirmChannel, type GetMessage } from 'amqplib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ServerConfig } from '../../core/config/server-config.js';
import { DeadLetteredStepConsumer, type DeadLetteredStepHandler } from './dead-lettered-step.consumer.js';

const RMQ_URL = process.env['RMQ_URL'] ?? 'amqp://guest:guest@127.0.0.1:5672';
const suffix = randomBytes(4).toString('hex');
const names = rmqNames(`agent-tools-test-${suffix}`, `agent-runs-test-${suffix}`);
const deadLetters = runsDeadLetterQueue(names);

/**
 * Messages in the queue, ready or delivered and not yet acknowledged: the broker's own view (AMQP sees only the ready
 * ones). Prompt for the classic dead-letter queue; a quorum queue's counts come a few seconds late.
 */
const messagesIn = async (queue: string): Promise<number> => {
  const { stdout } = await promisify(execFile)('rabbitmqctl', ['list_queues', '-s', 'name', 'messages']);
  const row = stdout.split('\n').map((line) => line.split('\t')).find(([name]) => name === queue);
  return Number(row?.[1] ?? Number.NaN);
};

const waitUntil = async (check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
};

/** A run step as the server publishes it (a Nest event packet); only the run id and the token matter here. */
const stepBody = (runId: string, dispatchToken: string) =>
  Buffer.from(
    JSON.stringify({
      pattern: AGENT_RUN_PATTERN,
      data: { kind: 'start', message: 'Hello', context: { run: { runId, threadId: randomUUID() }, dispatchToken, userPermissions: [] } },
    }),
  );

/** Records every handover; `failures` makes the next calls throw, as a database that is down would. */
class RecordingHandler implements DeadLetteredStepHandler {
  readonly calls: Array<{ runId: string; dispatchToken: string }> = [];
  failures = 0;

  async failDeadLetteredStep(runId: string, dispatchToken: string): Promise<void> {
    this.calls.push({ runId, dispatchToken });
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('the database is down');
    }
  }
}

let connection: ChannelModel;
let channel: ConfirmChannel;
let handler: RecordingHandler;
let consumer: DeadLetteredStepConsumer;
const warnings: string[] = [];

/** Takes the next step off the runs queue as a worker does, unacknowledged. */
const takeStep = async (): Promise<GetMessage> => {
  let message: GetMessage | false = false;
  await waitUntil(async () => (message = await channel.get(names.runsQueue, { noAck: false })) !== false, 3_000);
  if (!message) throw new Error(`No step on ${names.runsQueue}.`);
  return message;
};

const publishStep = async (body: Buffer, queue = names.runsQueue) => {
  channel.sendToQueue(queue, body, { persistent: true, contentType: 'application/json' });
  await channel.waitForConfirms();
};

beforeAll(async () => {
  await declareTopology(RMQ_URL, names);
  connection = await connect(RMQ_URL, { noDelay: true });
  connection.on('error', () => undefined);
  channel = await connection.createConfirmChannel();
  vi.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => void warnings.push(String(message)));
  vi.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  handler = new RecordingHandler();
  const config = { RABBITMQ_URL: RMQ_URL, AGENT_TOOLS_QUEUE: names.toolsQueue, AGENT_RUNS_QUEUE: names.runsQueue, SHUTDOWN_DRAIN_TIMEOUT_MS: 2_000 };
  consumer = new DeadLetteredStepConsumer(config as ServerConfig, handler);
  await consumer.start(`naalya-server-dead-lettered-steps-test-${suffix}`);
});

afterEach(() => {
  handler.calls.length = 0;
  handler.failures = 0;
  warnings.length = 0;
});

afterAll(async () => {
  await consumer?.close();
  await connection?.close().catch(() => undefined);
  await deleteTopology(RMQ_URL, names);
  vi.restoreAllMocks();
});

describe('DeadLetteredStepConsumer', () => {
  it('hands a step redelivered past the delivery limit (a step that crashes every worker) to the handler, then acknowledges it', async () => {
    const runId = randomUUID();
    await publishStep(stepBody(runId, 'v1.claims.signature'));

    // Four deliveries, none acknowledged: the limit is 3 redeliveries, then the broker dead-letters the step.
    for (let delivery = 0; delivery < 4; delivery += 1) channel.nack(await takeStep(), false, true);

    await waitUntil(() => handler.calls.length === 1);
    expect(handler.calls).toEqual([{ runId, dispatchToken: 'v1.claims.signature' }]);
    await waitUntil(async () => (await messagesIn(deadLetters)) === 0);
    expect(await messagesIn(deadLetters)).toBe(0);
    expect((await channel.checkQueue(names.runsQueue)).messageCount).toBe(0);
    expect(warnings.some((line) => line.includes(`Run ${runId}: its step was dead-lettered (delivery_limit)`))).toBe(true);
  });

  it('hands over a step a worker rejected (nack without requeue) at once', async () => {
    const runId = randomUUID();
    await publishStep(stepBody(runId, 'v1.other.token'));

    channel.nack(await takeStep(), false, false);

    await waitUntil(() => handler.calls.length === 1);
    expect(handler.calls).toEqual([{ runId, dispatchToken: 'v1.other.token' }]);
    await waitUntil(async () => (await messagesIn(deadLetters)) === 0);
    expect(await messagesIn(deadLetters)).toBe(0);
  });

  it('acknowledges and logs a dead-lettered message that is not a run step, and hands nothing over', async () => {
    const bodies = [
      Buffer.from('not json'),
      Buffer.from(JSON.stringify({ pattern: 'something.else', data: {} })),
      Buffer.from(JSON.stringify({ pattern: AGENT_RUN_PATTERN, data: { context: { run: { runId: randomUUID() } } } })),
      Buffer.from(JSON.stringify({ pattern: AGENT_RUN_PATTERN, data: { context: { run: { runId: 'not-a-uuid' }, dispatchToken: 't' } } })),
    ];
    for (const body of bodies) await publishStep(body, deadLetters);

    await waitUntil(async () => warnings.length === bodies.length && (await messagesIn(deadLetters)) === 0);
    expect(await messagesIn(deadLetters)).toBe(0);
    expect(handler.calls).toEqual([]);
    expect(warnings).toHaveLength(bodies.length);
    expect(warnings[0]).toBe(`A dead-lettered message on "${deadLetters}" (reason unknown) is a body that is not JSON; acknowledged and dropped.`);
    for (const line of warnings.slice(1)) expect(line).toMatch(/is not a run step with a run id and a dispatch token \(.+\); acknowledged and dropped\.$/);
  });

  it('retries a handler that fails, and acknowledges once it succeeds', async () => {
    const runId = randomUUID();
    handler.failures = 2;
    await publishStep(stepBody(runId, 'v1.retried.token'));

    channel.nack(await takeStep(), false, false);

    await waitUntil(() => handler.calls.length === 3);
    expect(handler.calls).toEqual(Array.from({ length: 3 }, () => ({ runId, dispatchToken: 'v1.retried.token' })));
    await waitUntil(async () => (await messagesIn(deadLetters)) === 0);
    expect(await messagesIn(deadLetters)).toBe(0);
    expect(warnings.filter((line) => line.includes('handling its dead-lettered step failed'))).toHaveLength(2);
  });
});
