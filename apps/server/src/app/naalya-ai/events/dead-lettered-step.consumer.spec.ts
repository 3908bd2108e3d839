import { randomUUID } from 'node:crypto';
import { AGENT_RUN_PATTERN } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import { readDeadLetteredStep } from './dead-lettered-step.consumer.js';

const message = (body: unknown, headers: Record<string, unknown> = {}) => ({
  content: Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
  properties: { headers } as never,
});

describe('readDeadLetteredStep', () => {
  const runId = randomUUID();

  it('reads the run id, the dispatch token and the reason of a step, whatever else its context holds or lacks', () => {
    const step = { pattern: AGENT_RUN_PATTERN, data: { kind: 'start', message: 'Hi', context: { run: { runId, threadId: 'x' }, dispatchToken: 'v1.a.b', extra: 1 } } };

    expect(readDeadLetteredStep(message(step, { 'x-first-death-reason': 'delivery_limit' }))).toEqual({ runId, dispatchToken: 'v1.a.b', reason: 'delivery_limit' });
    expect(readDeadLetteredStep(message(step))).toEqual({ runId, dispatchToken: 'v1.a.b', reason: 'reason unknown' });
  });

  it('says why a body is not a run step', () => {
    expect(readDeadLetteredStep(message('{'))).toEqual({ malformed: 'a body that is not JSON' });
    expect(readDeadLetteredStep(message(Buffer.alloc(1024 * 1024 + 1, 32)))).toEqual({ malformed: `a body of ${1024 * 1024 + 1} bytes` });
    const context = { run: { runId }, dispatchToken: 'v1.a.b' };
    for (const body of [
      null,
      { pattern: 'agent.run.lease', data: { context } },
      { pattern: AGENT_RUN_PATTERN, data: { context: { ...context, dispatchToken: undefined } } },
      { pattern: AGENT_RUN_PATTERN, data: { context: { ...context, dispatchToken: '' } } },
      { pattern: AGENT_RUN_PATTERN, data: { context: { ...context, run: { runId: 'run-1' } } } },
    ]) {
      expect(readDeadLetteredStep(message(body))).toMatchObject({ malformed: expect.stringMatching(/^not a run step with a run id and a dispatch token/) });
    }
  });
});
