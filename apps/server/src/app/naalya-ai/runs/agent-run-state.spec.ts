import { toRunInterrupt, type AgentRunEvent } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import type { StoredInterrupt } from './agent-run.entity.js';
import { PAUSED_WITHOUT_QUESTION_ERROR, runStateAfter, type RunState } from './agent-run-state.js';

const ids = { runId: 'run-1', threadId: 'thread-1' };
const running: RunState = { status: 'running', pendingInterrupts: [], error: null, errorCode: null };
const question = (interruptId: string) => ({ interruptId, question: `${interruptId}?`, askedBy: 'rover' as const });
const pause = (...interruptIds: string[]): AgentRunEvent => ({
  ...ids,
  type: 'RUN_FINISHED',
  outcome: { type: 'interrupt', interrupts: interruptIds.map((id) => toRunInterrupt(question(id))) },
});
/** An interrupt event with no question in it: the contract refuses it, but the state must not lock the thread on it. */
const emptyPause = { ...ids, type: 'RUN_FINISHED', outcome: { type: 'interrupt', interrupts: [] } } as unknown as AgentRunEvent;
const answered = (interruptId: string): StoredInterrupt => ({ ...question(interruptId), answered: true, answer: 'yes', delivered: true });

describe('runStateAfter', () => {
  it('only the end of a step changes the run', () => {
    expect(runStateAfter(running, { ...ids, type: 'RUN_STARTED' })).toBe(running);
    expect(runStateAfter(running, { ...ids, type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'hi' })).toBe(running);
  });

  it('RUN_FINISHED success finishes the run, RUN_ERROR fails it with its message', () => {
    expect(runStateAfter(running, { ...ids, type: 'RUN_FINISHED', outcome: { type: 'success' } })).toEqual({ ...running, status: 'finished' });
    expect(runStateAfter(running, { ...ids, type: 'RUN_ERROR', message: 'Too long.', code: 'STEP_TIMED_OUT' })).toEqual({ ...running, status: 'failed', error: 'Too long.', errorCode: 'STEP_TIMED_OUT' });
  });

  it('an interrupt adds its questions unanswered, after the answered ones of earlier steps', () => {
    const earlier = { ...running, pendingInterrupts: [answered('a')] };
    expect(runStateAfter(earlier, pause('b', 'c'))).toEqual({
      status: 'interrupted',
      error: null,
      errorCode: null,
      pendingInterrupts: [answered('a'), { ...question('b'), answered: false, delivered: false }, { ...question('c'), answered: false, delivered: false }],
    });
  });

  it('a replayed interrupt cannot reopen an answered question, and a pause with nothing to answer fails the run', () => {
    const earlier = { ...running, pendingInterrupts: [answered('a')] };
    expect(runStateAfter(earlier, pause('a'))).toEqual({ status: 'failed', pendingInterrupts: [answered('a')], error: PAUSED_WITHOUT_QUESTION_ERROR, errorCode: 'RUN_FAILED' });
    expect(runStateAfter(running, emptyPause)).toMatchObject({ status: 'failed', error: PAUSED_WITHOUT_QUESTION_ERROR });
  });

  it('a cancel or a failure ends the run and voids its unanswered questions; answered ones stay as they were', () => {
    const waiting: RunState = { status: 'interrupted', pendingInterrupts: [answered('a'), { ...question('b'), answered: false, delivered: false }], error: null, errorCode: null };
    const cancelled = runStateAfter(waiting, { ...ids, type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: [] } });
    expect(cancelled.status).toBe('cancelled');
    expect(cancelled.pendingInterrupts).toEqual([answered('a'), { ...question('b'), answered: false, delivered: false, voided: true }]);
    const expired = runStateAfter(waiting, { ...ids, type: 'RUN_ERROR', message: 'Too late.', code: 'QUESTION_EXPIRED' });
    expect(expired).toMatchObject({ status: 'failed', errorCode: 'QUESTION_EXPIRED' });
    expect(expired.pendingInterrupts[1]).toMatchObject({ voided: true });
  });
});
