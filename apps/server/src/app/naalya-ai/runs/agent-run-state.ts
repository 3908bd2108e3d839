import { fromRunInterrupt, type AgentInterrupt, type AgentRunEvent, type AgentRunStatus } from '@naalya/agent-tools';
import type { StoredInterrupt } from './agent-run.entity.js';

export const PAUSED_WITHOUT_QUESTION_ERROR = 'The assistant paused without a question to answer.';

export type RunState = { status: AgentRunStatus; pendingInterrupts: StoredInterrupt[]; error: string | null; errorCode: string | null };

const stored = (interrupt: AgentInterrupt): StoredInterrupt => ({ ...interrupt, answered: false, delivered: false });

/** A run that ends with questions unanswered: they can no longer be answered. */
const voided = (interrupts: StoredInterrupt[]): StoredInterrupt[] =>
  interrupts.map((interrupt) => (interrupt.answered ? interrupt : { ...interrupt, voided: true }));

/**
 * What a run event does to its run. Only the end of a step changes the run: RUN_FINISHED (success → finished;
 * interrupt → interrupted, its questions added to the pending ones; cancelled, written by the server → cancelled) or
 * RUN_ERROR (→ failed, the worker's or the server's). A run that ends leaves its unanswered questions voided.
 * Questions already known keep their entry, so a replayed RUN_FINISHED cannot reopen an answered question.
 */
export const runStateAfter = (run: RunState, event: AgentRunEvent): RunState => {
  if (event.type === 'RUN_ERROR') {
    return { status: 'failed', pendingInterrupts: voided(run.pendingInterrupts), error: event.message, errorCode: event.code };
  }
  if (event.type !== 'RUN_FINISHED') return run;
  const { outcome } = event;
  if (outcome.type === 'cancelled') return { status: 'cancelled', pendingInterrupts: voided(run.pendingInterrupts), error: null, errorCode: null };
  if (outcome.type === 'success') return { ...run, status: 'finished', error: null, errorCode: null };
  const known = new Set(run.pendingInterrupts.map((interrupt) => interrupt.interruptId));
  const added = outcome.interrupts
    .map(fromRunInterrupt)
    .filter((interrupt) => !known.has(interrupt.interruptId))
    .map(stored);
  const pendingInterrupts = [...run.pendingInterrupts, ...added];
  // Nothing left to answer would leave the thread locked for good: the step counts as failed instead.
  if (!pendingInterrupts.some((interrupt) => !interrupt.answered)) {
    return { status: 'failed', pendingInterrupts, error: PAUSED_WITHOUT_QUESTION_ERROR, errorCode: 'RUN_FAILED' };
  }
  return { status: 'interrupted', pendingInterrupts, error: null, errorCode: null };
};
