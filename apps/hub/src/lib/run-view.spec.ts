import type { AgentRunEvent } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import {
  STALL_AFTER_MS,
  activeRun,
  emptyThread,
  parseToolResult,
  pendingQuestions,
  runHint,
  threadReducer,
  toolStatusOf,
  type ThreadAction,
  type ThreadView,
} from './run-view';

const ids = { runId: 'run-1', threadId: 'thread-1' };
type EventInput = AgentRunEvent extends infer E ? (E extends AgentRunEvent ? Omit<E, 'runId' | 'threadId'> : never) : never;

const play = (events: EventInput[], state: ThreadView = emptyThread('thread-1'), runId = 'run-1', fromSeq = 0): ThreadView =>
  events.reduce(
    (current, event, index) => threadReducer(current, { type: 'event', runId, seq: fromSeq + index + 1, event: { ...ids, runId, ...event } as AgentRunEvent }),
    state,
  );

const apply = (state: ThreadView, ...actions: ThreadAction[]) => actions.reduce(threadReducer, state);

const LIST_RESULT = JSON.stringify({ data: [{ id: 'd1', name: 'Languages' }], scopeContext: 'Your access covers the whole school.' });
const TIMEOUT =
  'The "delete.department" tool timed out, the platform may be slow and could still be processing the request. This is an infrastructure issue, not a problem with your request. The outcome is unknown: the change may still complete. Do not retry this call; tell the user the outcome is unknown and ask them to check whether the change was made before trying again.';

const listDepartments: EventInput[] = [
  { type: 'RUN_STARTED' },
  { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'list_departments', speaker: 'rover', event: 'list.departments', args: {} },
  { type: 'TOOL_CALL_END', toolCallId: 'c1' },
  { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', content: LIST_RESULT, hopMs: 4.2 },
  { type: 'TEXT_MESSAGE_START', messageId: 'm1', speaker: 'rover' },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'I found 1 department: ' },
  { type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: 'Languages.' },
  { type: 'TEXT_MESSAGE_END', messageId: 'm1' },
  { type: 'RUN_FINISHED', outcome: 'success' },
];

describe('threadReducer: run events to the chat view model', () => {
  it('a read: a running tool card becomes done with its result and scope line, then Rover streams the answer', () => {
    const started = apply(emptyThread('thread-1'), { type: 'run-started', runId: 'run-1', message: 'list departments' });
    const running = play(listDepartments.slice(0, 3), started);
    expect(running.items.find((item) => item.kind === 'tool')).toMatchObject({ status: 'running', args: {} });

    const streaming = play(listDepartments.slice(3, 7), running, 'run-1', 3);
    expect(streaming.items.find((item) => item.kind === 'message')).toMatchObject({ text: 'I found 1 department: Languages.', streaming: true });

    const done = play(listDepartments.slice(7), streaming, 'run-1', 7);
    expect(done.items.map((item) => item.kind)).toEqual(['user', 'tool', 'message']);
    expect(done.items[1]).toMatchObject({
      status: 'done',
      hopMs: 4.2,
      result: { data: [{ id: 'd1', name: 'Languages' }], scopeContext: 'Your access covers the whole school.' },
    });
    expect(done.items[2]).toMatchObject({ speaker: 'rover', streaming: false });
    expect(done.runs).toEqual([{ id: 'run-1', status: 'finished', lastSeq: 9 }]);
    expect(activeRun(done)).toBeUndefined();
  });

  it('applies each event once: a replay after a reconnect changes nothing', () => {
    const once = play(listDepartments);
    const replayed = play(listDepartments, once);
    expect(replayed).toEqual(once);
  });

  it('attributes messages and tool calls to the specialist who made them', () => {
    const state = play([
      { type: 'RUN_STARTED' },
      { type: 'TEXT_MESSAGE_START', messageId: 'm1', speaker: 'class_teacher' },
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'list_class_students', speaker: 'class_teacher', event: 'list.class-students', args: { classId: 'x' } },
    ]);
    expect(state.items).toMatchObject([
      { kind: 'message', speaker: 'class_teacher' },
      { kind: 'tool', speaker: 'class_teacher', args: { classId: 'x' } },
    ]);
  });

  it('an ask_user question: pending, then sending (one answer), then answered; the run resumes', () => {
    const asked = play([
      { type: 'RUN_STARTED' },
      { type: 'TOOL_CALL_START', toolCallId: 'a1', toolCallName: 'ask_user', speaker: 'rover', args: { question: 'Delete the Languages department?' } },
      {
        type: 'RUN_FINISHED',
        outcome: 'interrupt',
        interrupts: [{ interruptId: 'i1', question: 'Delete the Languages department?', askedBy: 'rover' }],
      },
    ]);
    expect(pendingQuestions(asked)).toMatchObject([{ id: 'i1', state: 'pending', askedBy: 'rover' }]);
    expect(activeRun(asked)).toMatchObject({ status: 'interrupted' });
    // The ask_user call waits for its answer: not settled as failed or unknown.
    expect(asked.items.find((item) => item.kind === 'tool')).toMatchObject({ status: 'running' });

    const sending = apply(asked, { type: 'answer-sending', interruptId: 'i1', answer: 'yes' });
    expect(pendingQuestions(sending)).toHaveLength(0);
    const answered = apply(sending, { type: 'answer-accepted', interruptId: 'i1', resumed: true });
    expect(answered.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'answered', answer: 'yes' });
    expect(activeRun(answered)).toMatchObject({ status: 'running' });

    const resumed = play(
      [
        { type: 'RUN_STARTED' },
        { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'delete_department', speaker: 'rover', event: 'delete.department', args: { departmentId: 'd1' } },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'c2', content: JSON.stringify({ data: { id: 'd1' }, scopeContext: 'Your access covers the whole school.', auditId: 'audit-1' }) },
        { type: 'CUSTOM', name: 'department.deleted', value: { label: 'Department deleted', resourceType: 'department', auditId: 'audit-1' } },
        { type: 'RUN_FINISHED', outcome: 'success' },
      ],
      answered,
      'run-1',
      3,
    );
    expect(resumed.items.filter((item) => item.kind === 'tool' && item.name === 'delete_department')).toMatchObject([{ status: 'done', result: { auditId: 'audit-1' } }]);
    expect(resumed.items.find((item) => item.kind === 'success')).toMatchObject({ label: 'Department deleted', auditId: 'audit-1' });
  });

  it('a confirmation: the paused write waits for the answer (not outcome unknown), then shows its result after yes', () => {
    const asked = play([
      { type: 'RUN_STARTED' },
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'delete_department', speaker: 'rover', event: 'delete.department', args: { departmentId: 'd1' } },
      {
        type: 'RUN_FINISHED',
        outcome: 'interrupt',
        interrupts: [
          {
            interruptId: 'i1',
            question: 'Delete the department with id d1 and its member list? This cannot be undone.',
            askedBy: 'rover',
            toolCallId: 'c1',
            argsHash: 'hash',
            confirmation: { event: 'delete.department', callId: 'call-1' },
          },
        ],
      },
    ]);
    expect(pendingQuestions(asked)).toMatchObject([{ id: 'i1', confirm: true }]);
    expect(asked.items.find((item) => item.kind === 'tool')).toMatchObject({ status: 'running' });
    expect(asked.items.find((item) => item.kind === 'tool')).not.toHaveProperty('check');

    const resumed = play(
      [
        { type: 'RUN_STARTED' },
        { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', content: JSON.stringify({ data: { id: 'd1' }, scopeContext: 'Your access covers the whole school.', auditId: 'audit-1' }) },
        { type: 'RUN_FINISHED', outcome: 'success' },
      ],
      apply(asked, { type: 'answer-accepted', interruptId: 'i1', resumed: true }),
      'run-1',
      3,
    );
    expect(resumed.items.find((item) => item.kind === 'tool')).toMatchObject({ status: 'done', result: { auditId: 'audit-1' } });
  });

  it('a refused answer: a question already answered elsewhere shows as answered, a stale one as expired', () => {
    const asked = play([{ type: 'RUN_FINISHED', outcome: 'interrupt', interrupts: [{ interruptId: 'i1', question: 'Sure?', askedBy: 'dos' }] }]);
    const already = apply(asked, { type: 'answer-refused', interruptId: 'i1', message: 'This question has already been answered.', state: 'answered' });
    expect(already.items[0]).toMatchObject({ state: 'answered', note: 'This question has already been answered.', askedBy: 'dos' });
    const stale = apply(asked, { type: 'answer-refused', interruptId: 'i1', message: 'moved on', state: 'expired' });
    expect(stale.items[0]).toMatchObject({ state: 'expired' });
  });

  it('after a reload, the server summary decides: pending while the run waits, answered, or expired', () => {
    const asked = play([{ type: 'RUN_FINISHED', outcome: 'interrupt', interrupts: [{ interruptId: 'i1', question: 'Sure?', askedBy: 'rover' }] }]);
    const summary = { id: 'run-1', message: 'delete it', error: null, lastSeq: 1 };
    const question = { interruptId: 'i1', question: 'Sure?', askedBy: 'rover' as const };

    const waiting = apply(asked, { type: 'run-summary', run: { ...summary, status: 'interrupted', interrupts: [{ ...question, answered: false }] } });
    expect(pendingQuestions(waiting)).toHaveLength(1);
    expect(waiting.items.map((item) => item.kind)).toEqual(['question', 'user']);

    const answered = apply(asked, { type: 'run-summary', run: { ...summary, status: 'running', interrupts: [{ ...question, answered: true }] } });
    expect(answered.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'answered' });

    const expired = apply(asked, { type: 'run-summary', run: { ...summary, status: 'failed', interrupts: [{ ...question, answered: false }] } });
    expect(expired.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'expired' });
  });

  it('a timed-out write is "outcome unknown, checking", never done or failed, until its audit row is found', () => {
    const timedOut = play([
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'delete_department', speaker: 'rover', event: 'delete.department', args: { departmentId: 'd1' } },
      { type: 'TOOL_CALL_RESULT', toolCallId: 'c1', content: JSON.stringify({ error: TIMEOUT, code: 'TOOL_TIMED_OUT' }) },
    ]);
    expect(timedOut.items[0]).toMatchObject({ status: 'unknown', check: 'checking' });

    const notFound = apply(timedOut, { type: 'outcome-check', toolCallId: 'c1', check: 'not-found' });
    expect(notFound.items[0]).toMatchObject({ status: 'unknown', check: 'not-found' });

    const confirmed = apply(timedOut, { type: 'outcome-check', toolCallId: 'c1', check: 'confirmed', auditId: 'audit-9' });
    expect(confirmed.items[0]).toMatchObject({ status: 'done', check: 'confirmed', result: { auditId: 'audit-9' } });
  });

  it('a write left without a result when the step fails is outcome unknown; a read is failed', () => {
    const state = play([
      { type: 'TOOL_CALL_START', toolCallId: 'w', toolCallName: 'create_department', speaker: 'rover', event: 'create.department', args: { name: 'Arts' } },
      { type: 'TOOL_CALL_START', toolCallId: 'r', toolCallName: 'list_staff', speaker: 'rover', event: 'list.staff', args: {} },
      { type: 'RUN_ERROR', message: 'The assistant stopped.', code: 'RUN_FAILED' },
    ]);
    expect(state.items).toMatchObject([
      { id: 'w', status: 'unknown', check: 'checking' },
      { id: 'r', status: 'failed' },
      { kind: 'error', message: 'The assistant stopped.' },
    ]);
    expect(state.runs[0]?.status).toBe('failed');
  });
});

describe('tool results', () => {
  it('parses the envelope: data with scope and audit id, or an error', () => {
    expect(parseToolResult(JSON.stringify({ data: [], scopeContext: 'S', auditId: 'A' }))).toEqual({ data: [], scopeContext: 'S', auditId: 'A' });
    expect(parseToolResult(JSON.stringify({ error: 'No.', code: 'NOT_FOUND' }))).toEqual({ error: 'No.', code: 'NOT_FOUND' });
    expect(parseToolResult('2026-12-02T10:00:00Z')).toEqual({ data: '2026-12-02T10:00:00Z' });
  });

  it.each([
    [{ data: [] }, false, 'done'],
    [{ error: 'You do not have permission to list staff.', code: 'PERMISSION_DENIED' }, false, 'refused'],
    [{ error: 'Only the head of this department or an administrator can delete it.', code: 'PERMISSION_DENIED' }, true, 'refused'],
    [{ error: 'That action could not be completed. Do not retry; tell the user what you were trying to do.', code: 'TOOL_FAILED' }, true, 'failed'],
    [{ error: TIMEOUT, code: 'TOOL_TIMED_OUT' }, true, 'unknown'],
    [{ error: 'The platform could not confirm whether that change was saved. Do not retry; tell the user to check before trying again.', code: 'OUTCOME_UNKNOWN' }, true, 'unknown'],
    [{ error: 'The "list.staff" tool timed out, the platform may be slow. This is an infrastructure issue, not a problem with your request.', code: 'TOOL_TIMED_OUT' }, false, 'failed'],
    [{ error: 'The "list.staff" tool could not reach the platform or did not get a usable answer back.', code: 'PLATFORM_UNREACHABLE' }, true, 'unknown'],
    [{ error: 'Invalid tool arguments: name: Too small.', code: 'INVALID_ARGUMENTS' }, true, 'failed'],
    [{ error: 'The user did not approve this, so it was not done.', code: 'CONFIRMATION_DECLINED' }, true, 'refused'],
  ] as const)('%j (write: %s) is %s', (result, isWrite, status) => {
    expect(toolStatusOf(result, isWrite)).toBe(status);
  });
});

describe('runHint', () => {
  const run = (status: 'running' | 'interrupted') => ({ status }) as Parameters<typeof runHint>[0];

  it('says nothing when no run is going', () => {
    expect(runHint(undefined, 10 * STALL_AFTER_MS)).toBeNull();
  });

  it('shows a running run as working until it has been silent for a while, then as possibly stalled', () => {
    expect(runHint(run('running'), STALL_AFTER_MS - 1)).toBe('Rover is working…');
    expect(runHint(run('running'), STALL_AFTER_MS + 4_000)).toBe(
      'No news from Rover for 34 s: the run may be stalled. It continues if the platform recovers.',
    );
  });

  it('never calls a run waiting for the user stalled', () => {
    expect(runHint(run('interrupted'), 10 * STALL_AFTER_MS)).toBe('Answer the question above to continue.');
  });
});
