import { getToolCallOutcomeTool } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { insertLedgerEntry } from './fixtures/get-tool-call-outcome.fixture.js';
import { NO_RECORDED_OUTCOME_ERROR } from './tool-call-outcome.service.js';

let testApp: TestApp;
beforeAll(async () => {
  testApp = await createTestApp();
});
afterAll(() => testApp?.close());

const ask = async (persona: TestApp['demo']['platformAdmin'], callId: string) =>
  invokeTool(testApp.module, getToolCallOutcomeTool, await dispatchEnvelope(persona, getToolCallOutcomeTool, { callId }));

describe('get_tool_call_outcome: the caller\'s own calls only', () => {
  it('returns the stored result of a completed call to the user who made it', async () => {
    const [schoolA] = testApp.demo.schools;
    const callId = await insertLedgerEntry(testApp.owner, schoolA.personas.schoolAdmin);
    expect(await ask(schoolA.personas.schoolAdmin, callId)).toMatchObject({
      data: { callId, event: 'create.department', status: 'completed', result: { id: 'd1', name: 'Recorded' } },
    });
  });

  it('a colleague in the same school, an admin of another school and a platform admin all read it as not found', async () => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const callId = await insertLedgerEntry(testApp.owner, schoolA.personas.teacher);
    for (const intruder of [schoolA.personas.schoolAdmin, schoolB.personas.schoolAdmin, testApp.demo.platformAdmin]) {
      expect(await ask(intruder, callId)).toEqual({ error: NO_RECORDED_OUTCOME_ERROR, code: 'NO_RECORDED_OUTCOME' });
    }
  });

  it('an unknown call id reads the same as another user\'s', async () => {
    expect(await ask(testApp.demo.schools[0].personas.teacher, 'f'.repeat(64))).toEqual({ error: NO_RECORDED_OUTCOME_ERROR, code: 'NO_RECORDED_OUTCOME' });
  });
});
