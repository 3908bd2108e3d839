import type { GetMessage } from 'amqplib';
import { runsDeadLetterQueue } from '@naalya/rmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../../testing/test-app.js';
import { agentRequest, createAgentTestApp, createTestBroker, type TestBroker } from '../fixtures/agent-run-test-kit.js';

// The whole path on the real server, broker and database: a step that no worker gets through is dead-lettered by the
// runs queue, the server's consumer hands it to the sweeper, and the run fails with its sentence, freeing the thread.

let broker: TestBroker;
let testApp: TestApp;

beforeAll(async () => {
  broker = await createTestBroker();
  testApp = await createAgentTestApp(broker.names);
});
afterAll(async () => {
  await testApp?.close();
  await broker?.close();
});

const waitUntil = async (check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

/** The next step on the runs queue, taken as a worker takes it (unacknowledged). */
const takeStep = async (): Promise<GetMessage> => {
  let message: GetMessage | false = false;
  await waitUntil(async () => (message = await broker.channel.get(broker.names.runsQueue, { noAck: false })) !== false, 3_000);
  if (!message) throw new Error('No step on the runs queue.');
  return message;
};

describe('a run step the runs queue dead-letters', () => {
  it('fails its run with STEP_DEAD_LETTERED and a sentence, and the thread takes a new message', async () => {
    const persona = testApp.demo.schools[0].personas.teacher;
    const thread = await agentRequest(testApp.app, testApp, persona, 'POST', '/agent/threads', {});
    const threadId = (thread.body as { id: string }).id;
    const started = await agentRequest(testApp.app, testApp, persona, 'POST', `/agent/threads/${threadId}/runs`, { message: 'Hello' });
    expect(started.status).toBe(201);
    const { runId } = started.body as { runId: string };

    // Every worker that takes it dies before acknowledging: four deliveries, then the broker gives up on it.
    for (let delivery = 0; delivery < 4; delivery += 1) broker.channel.nack(await takeStep(), false, true);

    const status = async () => ((await testApp.owner.query(`SELECT status, error_code FROM agent_runs WHERE id = $1`, [runId])) as Record<string, unknown>[])[0];
    await waitUntil(async () => (await status())?.['status'] === 'failed');
    expect(await status()).toEqual({ status: 'failed', error_code: 'STEP_DEAD_LETTERED' });
    const events = (await testApp.owner.query(`SELECT type, payload FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [runId])) as {
      type: string;
      payload: Record<string, unknown>;
    }[];
    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', payload: { code: 'STEP_DEAD_LETTERED', message: expect.stringMatching(/failed on this message several times/) } });
    expect((await broker.channel.checkQueue(runsDeadLetterQueue(broker.names))).messageCount).toBe(0);

    const next = await agentRequest(testApp.app, testApp, persona, 'POST', `/agent/threads/${threadId}/runs`, { message: 'Hello again' });
    expect(next.status).toBe(201);
  });

  it('leaves a run alone when the dead-lettered step is not its current one (dispatched again since)', async () => {
    const persona = testApp.demo.schools[0].personas.teacher;
    const thread = await agentRequest(testApp.app, testApp, persona, 'POST', '/agent/threads', {});
    const threadId = (thread.body as { id: string }).id;
    const started = await agentRequest(testApp.app, testApp, persona, 'POST', `/agent/threads/${threadId}/runs`, { message: 'Hello' });
    const { runId } = started.body as { runId: string };
    const step = await takeStep();
    // The server has since dispatched the step again (a new epoch), as the sweeper does when a lease expires.
    await testApp.owner.query(`UPDATE agent_runs SET epoch = epoch + 1 WHERE id = $1`, [runId]);

    broker.channel.nack(step, false, false);

    await waitUntil(async () => (await broker.channel.checkQueue(runsDeadLetterQueue(broker.names))).messageCount === 0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(((await testApp.owner.query(`SELECT status FROM agent_runs WHERE id = $1`, [runId])) as { status: string }[])[0]?.status).toBe('running');
  });
});
