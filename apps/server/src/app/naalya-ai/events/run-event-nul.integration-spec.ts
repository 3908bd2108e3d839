import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../../testing/test-app.js';
import { agentRequest, createAgentTestApp, createTestBroker, runEvents, storeAsWorker, type TestBroker } from '../fixtures/agent-run-test-kit.js';

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

describe('run events carrying a NUL character (U+0000), which jsonb cannot hold', () => {
  it('a model output with a NUL is stored with U+FFFD in its place, and the run goes on to finish', async () => {
    const persona = testApp.demo.schools[0].personas.teacher;
    const thread = ((await agentRequest(testApp.app, testApp, persona, 'POST', '/agent/threads', {})).body as { id: string }).id;
    const started = await agentRequest(testApp.app, testApp, persona, 'POST', `/agent/threads/${thread}/runs`, { message: 'Say something odd' });
    const ids = { threadId: thread, runId: (started.body as { runId: string }).runId };
    const run = runEvents(ids);
    // A NUL, and a lone surrogate (which jsonb refuses too), in a model's output and in its message id.
    const outcome = await storeAsWorker(testApp, ids, [run.started(), run.text('m\u00001', 'before\u0000after \uD800'), run.finished()]);
    expect(outcome).toMatchObject({ kind: 'stored' });
    const rows = (await testApp.owner.query(`SELECT type, payload FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [ids.runId])) as { type: string; payload: Record<string, unknown> }[];
    expect(rows.map((row) => row.type)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_CONTENT', 'RUN_FINISHED']);
    expect(rows[1].payload).toMatchObject({ messageId: 'm\uFFFD1', delta: 'before\uFFFDafter \uFFFD' });
    const [{ status }] = (await testApp.owner.query(`SELECT status FROM agent_runs WHERE id = $1`, [ids.runId])) as { status: string }[];
    expect(status).toBe('finished');
  });
});
