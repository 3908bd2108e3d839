import { toRunInterrupt, type AgentInterrupt, type AgentRunEvent, type AgentSpeaker } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import {
  ANNOUNCED_MESSAGES,
  EXPIRY_WAIT_MS,
  activeRun,
  announcements,
  awaitsExpiry,
  questionAnnouncement,
  emptyThread,
  expiryText,
  hasLapsed,
  nextExpiry,
  orderedItems,
  parseToolResult,
  pendingQuestions,
  queuedRuns,
  runHint,
  stoppableRun,
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

/** A tool call as the worker streams it: START, its arguments as two JSON fragments, END. */
const call = (toolCallId: string, toolCallName: string, args: Record<string, unknown> = {}, extra: { event?: string; subagentRunId?: string } = {}): EventInput[] => {
  const text = JSON.stringify(args);
  const half = Math.ceil(text.length / 2);
  const by = extra.subagentRunId ? { subagentRunId: extra.subagentRunId } : {};
  return [
    { type: 'TOOL_CALL_START', toolCallId, toolCallName, ...(extra.event ? { metadata: { event: extra.event } } : {}), ...by },
    { type: 'TOOL_CALL_ARGS', toolCallId, delta: text.slice(0, half), ...by },
    { type: 'TOOL_CALL_ARGS', toolCallId, delta: text.slice(half), ...by },
    { type: 'TOOL_CALL_END', toolCallId, ...by },
  ];
};
const result = (toolCallId: string, content: string, hopMs?: number): EventInput => ({
  type: 'TOOL_CALL_RESULT',
  messageId: `result-${toolCallId}`,
  toolCallId,
  role: 'tool',
  content,
  ...(hopMs === undefined ? {} : { metadata: { hopMs } }),
});
/** A message as the model streams it: START, one delta per piece, END. */
const say = (messageId: string, name: AgentSpeaker, ...pieces: string[]): EventInput[] => [
  { type: 'TEXT_MESSAGE_START', messageId, role: 'assistant', name },
  ...pieces.map((delta): EventInput => ({ type: 'TEXT_MESSAGE_CONTENT', messageId, delta })),
  { type: 'TEXT_MESSAGE_END', messageId },
];
const success: EventInput = { type: 'RUN_FINISHED', outcome: { type: 'success' } };
const interrupted = (...interrupts: AgentInterrupt[]): EventInput => ({
  type: 'RUN_FINISHED',
  outcome: { type: 'interrupt', interrupts: interrupts.map((interrupt) => toRunInterrupt(interrupt)) as [ReturnType<typeof toRunInterrupt>] },
});

const LIST_RESULT = JSON.stringify({ data: [{ id: 'd1', name: 'Languages' }], scopeContext: 'Your access covers the whole school.' });
const TIMEOUT =
  'The "delete.department" tool timed out, the platform may be slow and could still be processing the request. This is an infrastructure issue, not a problem with your request. The outcome is unknown: the change may still complete. Do not retry this call; tell the user the outcome is unknown and ask them to check whether the change was made before trying again.';

// 1 RUN_STARTED, 2-5 the call, 6 its result, 7 START, 8-9 the deltas, 10 END, 11 RUN_FINISHED.
const listDepartments: EventInput[] = [
  { type: 'RUN_STARTED' },
  ...call('c1', 'list_departments', {}, { event: 'list.departments' }),
  result('c1', LIST_RESULT, 4.2),
  ...say('m1', 'rover', 'I found 1 department: ', 'Languages.'),
  success,
];

describe('threadReducer: run events to the chat view model', () => {
  it('a read: a running tool card becomes done with its result and scope line, then Rover streams the answer', () => {
    const started = apply(emptyThread('thread-1'), { type: 'run-started', runId: 'run-1', message: 'list departments' });
    const running = play(listDepartments.slice(0, 5), started);
    expect(running.items.find((item) => item.kind === 'tool')).toMatchObject({ status: 'running', args: {}, argsComplete: true });

    const streaming = play(listDepartments.slice(5, 9), running, 'run-1', 5);
    expect(streaming.items.find((item) => item.kind === 'message')).toMatchObject({ text: 'I found 1 department: Languages.', streaming: true });

    const done = play(listDepartments.slice(9), streaming, 'run-1', 9);
    expect(done.items.map((item) => item.kind)).toEqual(['user', 'tool', 'message']);
    expect(done.items[1]).toMatchObject({
      status: 'done',
      hopMs: 4.2,
      result: { data: [{ id: 'd1', name: 'Languages' }], scopeContext: 'Your access covers the whole school.' },
    });
    expect(done.items[2]).toMatchObject({ speaker: 'rover', streaming: false });
    expect(done.runs).toEqual([{ id: 'run-1', status: 'finished', lastSeq: 11, fromStart: true }]);
    expect(activeRun(done)).toBeUndefined();
  });

  it('applies each event once: a replay after a reconnect changes nothing', () => {
    const once = play(listDepartments);
    const replayed = play(listDepartments, once);
    expect(replayed).toEqual(once);
  });

  it('attributes a message by its name, and a tool call by its subagentRunId to the specialist SUBAGENT_STARTED named', () => {
    const state = play([
      { type: 'RUN_STARTED' },
      ...call('t1', 'task', { subagent_type: 'class_teacher', description: 'list the class' }),
      { type: 'SUBAGENT_STARTED', subagentRunId: 'sub-1', name: 'class_teacher', parentToolCallId: 't1' },
      ...say('m1', 'class_teacher', 'Looking.'),
      ...call('c1', 'list_class_students', { classId: 'x' }, { event: 'list.class-students', subagentRunId: 'sub-1' }),
      { type: 'SUBAGENT_FINISHED', subagentRunId: 'sub-1', outcome: { type: 'success' } },
      ...call('c2', 'list_staff', {}, { event: 'list.staff' }),
    ]);
    expect(state.items).toMatchObject([
      { kind: 'tool', id: 't1', speaker: 'rover' },
      { kind: 'message', speaker: 'class_teacher' },
      { kind: 'tool', id: 'c1', speaker: 'class_teacher', event: 'list.class-students', args: { classId: 'x' } },
      { kind: 'tool', id: 'c2', speaker: 'rover' },
    ]);
    // An unknown subagentRunId (its SUBAGENT_STARTED not seen) is not guessed: Rover.
    const unknown = play(call('c3', 'list_staff', {}, { subagentRunId: 'sub-unknown' }));
    expect(unknown.items[0]).toMatchObject({ speaker: 'rover' });
  });

  it('an ask_user question: pending, then sending (one answer), then answered; the run resumes', () => {
    const asked = play([
      { type: 'RUN_STARTED' },
      ...call('a1', 'ask_user', { question: 'Delete the Languages department?' }),
      interrupted({ interruptId: 'i1', question: 'Delete the Languages department?', askedBy: 'rover' }),
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
        ...call('c2', 'delete_department', { departmentId: 'd1' }, { event: 'delete.department' }),
        result('c2', JSON.stringify({ data: { id: 'd1' }, scopeContext: 'Your access covers the whole school.', auditId: 'audit-1' })),
        { type: 'CUSTOM', name: 'department.deleted', value: { label: 'Department deleted', resourceType: 'department', auditId: 'audit-1' } },
        success,
      ],
      answered,
      'run-1',
      6,
    );
    expect(resumed.items.filter((item) => item.kind === 'tool' && item.name === 'delete_department')).toMatchObject([{ status: 'done', result: { auditId: 'audit-1' } }]);
    expect(resumed.items.find((item) => item.kind === 'success')).toMatchObject({ label: 'Department deleted', auditId: 'audit-1' });
  });

  it('a confirmation: the paused write waits for the answer (not outcome unknown), then shows its result after yes', () => {
    const asked = play([
      { type: 'RUN_STARTED' },
      ...call('c1', 'delete_department', { departmentId: 'd1' }, { event: 'delete.department' }),
      {
        type: 'RUN_FINISHED',
        outcome: {
          type: 'interrupt',
          interrupts: [
            {
              ...toRunInterrupt({
                interruptId: 'i1',
                question: 'Delete the department with id d1 and its member list? This cannot be undone.',
                askedBy: 'rover',
                toolCallId: 'c1',
                argsHash: 'hash',
                confirmation: { event: 'delete.department', callId: 'call-1' },
              }),
              expiresAt: '2026-12-05T13:00:00.000Z',
            },
          ],
        },
      },
    ]);
    // Typed by its reason, with the expiry the server stamped on it.
    expect(pendingQuestions(asked)).toMatchObject([{ id: 'i1', confirm: true, toolCallId: 'c1', expiresAt: '2026-12-05T13:00:00.000Z' }]);
    expect(asked.items.find((item) => item.kind === 'tool')).toMatchObject({ status: 'running' });
    expect(asked.items.find((item) => item.kind === 'tool')).not.toHaveProperty('check');

    const resumed = play(
      [
        { type: 'RUN_STARTED' },
        result('c1', JSON.stringify({ data: { id: 'd1' }, scopeContext: 'Your access covers the whole school.', auditId: 'audit-1' })),
        success,
      ],
      apply(asked, { type: 'answer-accepted', interruptId: 'i1', resumed: true }),
      'run-1',
      6,
    );
    expect(resumed.items.find((item) => item.kind === 'tool')).toMatchObject({ status: 'done', result: { auditId: 'audit-1' } });
  });

  it('a refused answer: a question already answered elsewhere shows as answered, a stale one as expired', () => {
    const asked = play([interrupted({ interruptId: 'i1', question: 'Sure?', askedBy: 'dos' })]);
    const already = apply(asked, { type: 'answer-refused', interruptId: 'i1', message: 'This question has already been answered.', state: 'answered' });
    expect(already.items[0]).toMatchObject({ state: 'answered', note: 'This question has already been answered.', askedBy: 'dos' });
    const stale = apply(asked, { type: 'answer-refused', interruptId: 'i1', message: 'moved on', state: 'expired' });
    expect(stale.items[0]).toMatchObject({ state: 'expired' });
  });

  it('after a reload, the server summary decides: pending while the run waits, answered, or expired', () => {
    const asked = play([interrupted({ interruptId: 'i1', question: 'Sure?', askedBy: 'rover' })]);
    const summary = { id: 'run-1', message: 'delete it', error: null, lastSeq: 1 };
    const question = { interruptId: 'i1', question: 'Sure?', askedBy: 'rover' as const, expiresAt: null };

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
      ...call('c1', 'delete_department', { departmentId: 'd1' }, { event: 'delete.department' }),
      result('c1', JSON.stringify({ error: TIMEOUT, code: 'TOOL_TIMED_OUT' })),
    ]);
    expect(timedOut.items[0]).toMatchObject({ status: 'unknown', check: 'checking' });

    const notFound = apply(timedOut, { type: 'outcome-check', toolCallId: 'c1', check: 'not-found' });
    expect(notFound.items[0]).toMatchObject({ status: 'unknown', check: 'not-found' });

    const confirmed = apply(timedOut, { type: 'outcome-check', toolCallId: 'c1', check: 'confirmed', auditId: 'audit-9' });
    expect(confirmed.items[0]).toMatchObject({ status: 'done', check: 'confirmed', result: { auditId: 'audit-9' } });
  });

  it('a write left without a result when the step fails is outcome unknown; a read is failed', () => {
    const state = play([
      ...call('w', 'create_department', { name: 'Arts' }, { event: 'create.department' }),
      ...call('r', 'list_staff', {}, { event: 'list.staff' }),
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

describe('streaming: text and tool arguments as they arrive, announced once, a snapshot for a late page', () => {
  it('a message grows delta by delta and stays streaming until its END; a delta after the END changes nothing', () => {
    const message = say('m1', 'rover', 'I found ', '1 department.');
    const partial = play(message.slice(0, 2));
    expect(partial.items).toMatchObject([{ kind: 'message', text: 'I found ', streaming: true }]);
    const whole = play(message.slice(2), partial, 'run-1', 2);
    expect(whole.items).toMatchObject([{ kind: 'message', text: 'I found 1 department.', streaming: false }]);
    const late = play([{ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta: ' More.' }], whole, 'run-1', 4);
    expect(late.items).toEqual(whole.items);
  });

  it('tool arguments: the partial JSON text while they stream, the parsed object once TOOL_CALL_END arrives', () => {
    const events = call('c1', 'create_department', { name: 'Robotics' }, { event: 'create.department' });
    const filling = play(events.slice(0, 2));
    expect(filling.items[0]).toMatchObject({ argsText: '{"name":"R', argsComplete: false });
    expect(filling.items[0]).not.toHaveProperty('args');
    const filled = play(events.slice(2, 3), filling, 'run-1', 2);
    expect(filled.items[0]).toMatchObject({ argsText: '{"name":"Robotics"}', argsComplete: false });
    expect(filled.items[0]).not.toHaveProperty('args');
    const complete = play(events.slice(3), filled, 'run-1', 3);
    expect(complete.items[0]).toMatchObject({ argsComplete: true, args: { name: 'Robotics' } });
    // A fragment after the END is not the call's: ignored.
    expect(play([{ type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '}' }], complete, 'run-1', 4).items).toEqual(complete.items);
  });

  it('arguments that are not a JSON object are shown as they came, never as an object', () => {
    const state = play([
      { type: 'TOOL_CALL_START', toolCallId: 'c1', toolCallName: 'list_staff' },
      { type: 'TOOL_CALL_ARGS', toolCallId: 'c1', delta: '{"truncated' },
      { type: 'TOOL_CALL_END', toolCallId: 'c1' },
      { type: 'TOOL_CALL_START', toolCallId: 'c2', toolCallName: 'get_time' },
      { type: 'TOOL_CALL_END', toolCallId: 'c2' },
    ]);
    expect(state.items[0]).toMatchObject({ argsComplete: true, argsText: '{"truncated' });
    expect(state.items[0]).not.toHaveProperty('args');
    // No fragments at all: no arguments.
    expect(state.items[1]).toMatchObject({ argsComplete: true, args: {} });
  });

  it('the live region: a message is announced once it is complete, never while it streams', () => {
    const streaming = play([{ type: 'RUN_STARTED' }, ...say('m1', 'rover', 'I found ', '1 department.').slice(0, 3)]);
    expect(announcements(streaming)).toEqual([]);
    const done = play([{ type: 'TEXT_MESSAGE_END', messageId: 'm1' }], streaming, 'run-1', 4);
    expect(announcements(done)).toMatchObject([{ id: 'm1', speaker: 'rover', text: 'I found 1 department.' }]);
    // Later events leave the announcement as it is (the region adds, never repeats).
    expect(announcements(play([success], done, 'run-1', 5))).toEqual(announcements(done));
    // It keeps the newest few only.
    const many = play(['a', 'b', 'c', 'd', 'e'].flatMap((id) => say(id, 'rover', `Message ${id}.`)));
    expect(announcements(many).map((item) => item.id)).toEqual(['c', 'd', 'e']);
    expect(ANNOUNCED_MESSAGES).toBe(3);
  });

  it('a thread opened later replays its history silently; what its run says after that is announced', () => {
    const opened = apply(emptyThread('thread-1'), {
      type: 'run-summary',
      history: true,
      run: { id: 'run-1', status: 'interrupted', message: 'delete Languages', interrupts: [], error: null, lastSeq: 4 },
    });
    const replayed = play([{ type: 'RUN_STARTED' }, ...say('m1', 'rover', 'Are you sure?')], opened);
    expect(replayed.items.find((item) => item.kind === 'message')).toMatchObject({ text: 'Are you sure?', live: false });
    expect(announcements(replayed)).toEqual([]);
    const resumed = play([{ type: 'RUN_STARTED' }, ...say('m2', 'rover', 'Deleted.')], replayed, 'run-1', 4);
    expect(announcements(resumed).map((item) => item.text)).toEqual(['Deleted.']);
  });

  it('MESSAGES_SNAPSHOT: a page that joins a run late renders the conversation from it (its user messages come from the runs)', () => {
    const snapshot: EventInput = {
      type: 'MESSAGES_SNAPSHOT',
      messages: [
        { id: 'u1', role: 'user', content: 'delete Languages' },
        {
          id: 'm1',
          role: 'assistant',
          name: 'rover',
          content: 'Let me check.',
          toolCalls: [{ id: 'c1', type: 'function', function: { name: 'list_departments', arguments: '{}' } }],
        },
        { id: 'r1', role: 'tool', toolCallId: 'c1', content: LIST_RESULT },
        { id: 'm2', role: 'assistant', name: 'dos', toolCalls: [{ id: 'c2', type: 'function', function: { name: 'delete_department', arguments: '{"departmentId":"d1"}' } }] },
      ],
    };
    // Its first event read is seq 6: the page missed the run's start.
    const late = play([snapshot], emptyThread('thread-1'), 'run-1', 5);
    expect(late.runs[0]).toMatchObject({ fromStart: false });
    expect(late.items).toMatchObject([
      { kind: 'message', id: 'm1', speaker: 'rover', text: 'Let me check.', streaming: false, live: false },
      { kind: 'tool', id: 'c1', status: 'done', result: { scopeContext: 'Your access covers the whole school.' } },
      { kind: 'tool', id: 'c2', speaker: 'dos', args: { departmentId: 'd1' }, argsComplete: true, status: 'running' },
    ]);
    expect(late.items.some((item) => item.kind === 'user')).toBe(false);
  });

  it('MESSAGES_SNAPSHOT: a page that read the run from its first event shows nothing twice, whatever the ids, and keeps what it had', () => {
    const seen = play([{ type: 'RUN_STARTED' }, ...say('m1', 'rover', 'Let me check.'), ...call('c1', 'list_departments', {}, { event: 'list.departments' }), result('c1', LIST_RESULT, 2)]);
    const after = play(
      [
        {
          type: 'MESSAGES_SNAPSHOT',
          messages: [
            // The model's own message id, not the streamed text's.
            { id: 'lc-run-1', role: 'assistant', name: 'rover', content: 'Let me check.', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'list_departments', arguments: '{}' } }] },
            { id: 'r1', role: 'tool', toolCallId: 'c1', content: JSON.stringify({ error: 'other' }) },
          ],
        },
      ],
      seen,
      'run-1',
      9,
    );
    expect(after.items).toEqual(seen.items);
    // A late page dedupes by id: the tool call it has keeps its result; text under another id is the snapshot's to add.
    const lateSeen = play([...say('m1', 'rover', 'Let me check.'), ...call('c1', 'list_departments'), result('c1', LIST_RESULT)], emptyThread('thread-1'), 'run-1', 3);
    const lateAfter = play(
      [{ type: 'MESSAGES_SNAPSHOT', messages: [{ id: 'm1', role: 'assistant', name: 'rover', content: 'Let me check.' }, { id: 'r1', role: 'tool', toolCallId: 'c1', content: '{"error":"x"}' }] }],
      lateSeen,
      'run-1',
      20,
    );
    expect(lateAfter.items).toEqual(lateSeen.items);
  });

  it('a question and a confirmation from RUN_FINISHED: typed by their reason, asked by whom the metadata says', () => {
    const state = play([
      interrupted(
        { interruptId: 'q1', question: 'Which term?', askedBy: 'dos' },
        { interruptId: 'q2', question: 'Create it?', askedBy: 'rover', toolCallId: 'c9', argsHash: 'h', confirmation: { event: 'create.department', callId: 'k' } },
      ),
    ]);
    expect(pendingQuestions(state)).toEqual([
      { kind: 'question', id: 'q1', runId: 'run-1', question: 'Which term?', askedBy: 'dos', state: 'pending', live: true },
      { kind: 'question', id: 'q2', runId: 'run-1', question: 'Create it?', askedBy: 'rover', state: 'pending', confirm: true, toolCallId: 'c9', event: 'create.department', live: true },
    ]);
  });

  it("a confirmation carries its tool's event, the editable arguments' values and, asked again after an edit, what changed", () => {
    const confirmation = { event: 'approve.lesson-plan', callId: 'k', args: { lessonPlanId: 'p1', comment: 'Add homework' } };
    const state = play([
      interrupted(
        { interruptId: 'q1', question: 'Approve "Fractions"?', askedBy: 'dos', toolCallId: 'c1', argsHash: 'h1', confirmation: { ...confirmation, editable: {} } },
        {
          interruptId: 'q2',
          question: 'Approve "Fractions"? Your comment goes with it.',
          askedBy: 'dos',
          toolCallId: 'c1',
          argsHash: 'h2',
          confirmation: { ...confirmation, editable: { comment: 'Add homework' }, edited: [{ field: 'comment', from: null, to: 'Add homework' }] },
        },
      ),
    ]);
    expect(pendingQuestions(state)).toMatchObject([
      { id: 'q1', confirm: true, event: 'approve.lesson-plan', editable: {} },
      { id: 'q2', confirm: true, event: 'approve.lesson-plan', editable: { comment: 'Add homework' }, edited: [{ field: 'comment', from: null, to: 'Add homework' }] },
    ]);
    // Nothing edited yet: no "You changed".
    expect(pendingQuestions(state)[0]).not.toHaveProperty('edited');
  });

  it('the assertive announcer: the newest question asked while the page watched, none replayed after a reload, none once answered', () => {
    const asked = play([interrupted({ interruptId: 'q1', question: 'Which term?', askedBy: 'dos' })]);
    expect(questionAnnouncement(asked)).toMatchObject({ id: 'q1', question: 'Which term?' });
    // The same question replayed from history (a reload): on screen, answerable, not read out again.
    const opened = apply(emptyThread('thread-1'), {
      type: 'run-summary',
      history: true,
      run: { id: 'run-1', status: 'interrupted', message: 'which term', interrupts: [], error: null, lastSeq: 9 },
    });
    const replayed = play([interrupted({ interruptId: 'q1', question: 'Which term?', askedBy: 'dos' })], opened, 'run-1', 8);
    expect(pendingQuestions(replayed).map((item) => item.id)).toEqual(['q1']);
    expect(questionAnnouncement(replayed)).toBeUndefined();
    expect(questionAnnouncement(apply(asked, { type: 'answer-sending', interruptId: 'q1', answer: 'Term 1' }))).toBeUndefined();
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

describe('run states the server reports: queued, stopped, failed, questions that expire', () => {
  const started = (runId: string, message: string, status?: 'running' | 'queued') => ({ type: 'run-started', runId, message, ...(status ? { status } : {}) }) as const;
  const deletion: EventInput[] = [
    { type: 'RUN_STARTED' },
    ...call('r1', 'list_departments', {}, { event: 'list.departments' }),
    result('r1', LIST_RESULT),
    ...call('c1', 'delete_department', { departmentId: 'd1' }, { event: 'delete.department' }),
    interrupted({
      interruptId: 'i1',
      question: 'Delete the department with id d1?',
      askedBy: 'rover',
      toolCallId: 'c1',
      argsHash: 'hash',
      confirmation: { event: 'delete.department', callId: 'call-1' },
    }),
  ];

  it('a queued message waits for the current reply: queued, then running once the server starts it', () => {
    const first = apply(emptyThread('thread-1'), started('run-1', 'list departments'));
    const both = apply(first, started('run-2', 'list staff', 'queued'));
    expect(activeRun(both)).toMatchObject({ id: 'run-1', status: 'running' });
    expect(queuedRuns(both)).toMatchObject([{ id: 'run-2', status: 'queued' }]);
    expect(runHint(both)).toBe('Rover is working… 1 message queued: waiting for the current reply to finish.');

    const finished = play(listDepartments, both);
    expect(runHint(finished)).toBe('Your message is queued: waiting for the current reply to finish.');
    // Stop stops the active run; with none, the queued one.
    expect(stoppableRun(both)?.id).toBe('run-1');
    expect(stoppableRun(finished)?.id).toBe('run-2');

    const running = apply(finished, { type: 'run-summary', run: { id: 'run-2', status: 'running', message: 'list staff', interrupts: [], error: null } });
    expect(activeRun(running)?.id).toBe('run-2');
    expect(runHint(running)).toBe('Rover is working…');
  });

  it('a queued message shows after the reply it waited for, whatever order the events came in', () => {
    const both = apply(emptyThread('thread-1'), started('run-1', 'list departments'), started('run-2', 'list staff', 'queued'));
    const answered = play(listDepartments, both);
    expect(orderedItems(answered).map((item) => `${item.runId}:${item.kind}`)).toEqual(['run-1:user', 'run-1:tool', 'run-1:message', 'run-2:user']);
  });

  it('says nothing when no run is going, and an interrupted run waits for the user (never "stalled")', () => {
    expect(runHint(emptyThread('thread-1'))).toBeNull();
    const asked = play(deletion);
    expect(runHint(asked)).toBe('A question above is waiting for your answer. Answer it, or stop the run.');
    expect(runHint(play(listDepartments))).toBeNull();
  });

  it('a stopped run: "stopped" once, with the writes it committed; its question and its unconfirmed write are not answerable or done', () => {
    const asked = play(deletion, apply(emptyThread('thread-1'), started('run-1', 'delete Languages')));
    const writes = [{ callId: 'call-0', event: 'create.department', auditId: 'audit-0' }];
    const cancelled = apply(asked, { type: 'run-cancelled', runId: 'run-1', status: 'cancelled', cancelled: true, committedWrites: writes });
    expect(cancelled.runs[0]?.status).toBe('cancelled');
    expect(activeRun(cancelled)).toBeUndefined();
    expect(stoppableRun(cancelled)).toBeUndefined();
    expect(cancelled.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'stopped' });
    expect(pendingQuestions(cancelled)).toHaveLength(0);
    // The call waiting for its confirmation never ran.
    expect(cancelled.items.find((item) => item.kind === 'tool' && item.id === 'c1')).toMatchObject({ status: 'stopped' });
    expect(cancelled.items.find((item) => item.kind === 'tool' && item.id === 'r1')).toMatchObject({ status: 'done' });
    expect(cancelled.items.filter((item) => item.kind === 'stopped')).toEqual([{ kind: 'stopped', id: 'run-1:stopped', runId: 'run-1', committedWrites: writes }]);

    // The server's own RUN_FINISHED{cancelled} in the stream, and a second Stop: the same stop, shown once.
    const streamed = play([{ type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: writes } }], cancelled, 'run-1', deletion.length);
    const again = apply(streamed, { type: 'run-cancelled', runId: 'run-1', status: 'cancelled', cancelled: false, committedWrites: writes });
    expect(again.items.filter((item) => item.kind === 'stopped')).toHaveLength(1);
    expect(again.items).toEqual(cancelled.items);
  });

  it('a run stopped mid-step: a read without a result is stopped, a write without one is outcome unknown (it may have committed)', () => {
    const state = play([
      { type: 'RUN_STARTED' },
      ...call('w', 'create_department', { name: 'Arts' }, { event: 'create.department' }),
      ...call('r', 'list_staff', {}, { event: 'list.staff' }),
      { type: 'RUN_FINISHED', outcome: { type: 'cancelled' }, metadata: { committedWrites: [] } },
    ]);
    expect(state.items).toMatchObject([
      { id: 'w', status: 'unknown', check: 'checking' },
      { id: 'r', status: 'stopped' },
      { kind: 'stopped', committedWrites: [] },
    ]);
    expect(state.runs[0]?.status).toBe('cancelled');
  });

  it('a stop answered for a run that had already finished keeps its end', () => {
    const done = play(listDepartments);
    const late = apply(done, { type: 'run-cancelled', runId: 'run-1', status: 'finished', cancelled: false, committedWrites: [] });
    expect(late.runs[0]?.status).toBe('finished');
    expect(late.items.some((item) => item.kind === 'stopped')).toBe(false);
  });

  it('a failed run shows its sentence and code once, with its message to send again; its open question is no longer answerable', () => {
    const asked = play(deletion, apply(emptyThread('thread-1'), started('run-1', 'delete Languages')));
    const sentence = 'The assistant stopped responding while working on this message, so it was stopped. Please send it again.';
    const failed = play([{ type: 'RUN_ERROR', code: 'RUN_ABANDONED', message: sentence }], asked, 'run-1', deletion.length);
    expect(failed.runs[0]?.status).toBe('failed');
    expect(failed.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'expired' });
    expect(failed.items.find((item) => item.kind === 'question')).not.toHaveProperty('askAgain');
    expect(failed.items.filter((item) => item.kind === 'error')).toEqual([
      { kind: 'error', id: 'run-1:error', runId: 'run-1', code: 'RUN_ABANDONED', message: sentence, sendAgain: 'delete Languages' },
    ]);
    // The write it asked about never ran: stopped, not "outcome unknown".
    expect(failed.items.find((item) => item.kind === 'tool' && item.id === 'c1')).toMatchObject({ status: 'stopped' });
    // The summary read after the events agrees, and adds nothing.
    const summarised = apply(failed, {
      type: 'run-summary',
      afterEvents: true,
      run: { id: 'run-1', status: 'failed', message: 'delete Languages', interrupts: [], error: sentence, errorCode: 'RUN_ABANDONED' },
    });
    expect(summarised.items).toEqual(failed.items);
  });

  it('a question that ran out of time (QUESTION_EXPIRED) says so itself and offers to ask again with the run\'s message; no second error, nothing that waited with it failed', () => {
    // A specialist's task waits with the question it asked.
    const delegated: EventInput[] = [{ type: 'RUN_STARTED' }, ...call('t1', 'task', { description: 'delete Languages' }), ...deletion.slice(1)];
    const waiting = play(delegated, apply(emptyThread('thread-1'), started('run-1', 'delete Languages')));
    const expiry = { type: 'RUN_ERROR', code: 'QUESTION_EXPIRED', message: 'This question expired before it was answered.' } as const;
    const failed = play([expiry], waiting, 'run-1', delegated.length);
    expect(failed.runs[0]?.status).toBe('failed');
    expect(failed.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'expired', askAgain: 'delete Languages' });
    expect(failed.items.filter((item) => item.kind === 'error')).toEqual([]);
    expect(failed.items.filter((item) => item.kind === 'tool').map((item) => item.kind === 'tool' && [item.id, item.status])).toEqual([
      ['t1', 'stopped'],
      ['r1', 'done'],
      ['c1', 'stopped'],
    ]);
    const asked = play(deletion, apply(emptyThread('thread-1'), started('run-1', 'delete Languages')));
    // Told again (the summary after the events, a replay): nothing changes.
    const summarised = apply(failed, {
      type: 'run-summary',
      afterEvents: true,
      run: { id: 'run-1', status: 'failed', message: 'delete Languages', interrupts: [], error: expiry.message, errorCode: 'QUESTION_EXPIRED' },
    });
    expect(summarised.items).toEqual(failed.items);

    // An answer the server refused as expired first (its note), then the run's end: the same offer, the note gone.
    const refused = apply(asked, { type: 'answer-refused', interruptId: 'i1', message: 'This question expired before it was answered.', state: 'expired' });
    const ended = play([expiry], refused, 'run-1', deletion.length);
    const question = ended.items.find((item) => item.kind === 'question');
    expect(question).toMatchObject({ state: 'expired', askAgain: 'delete Languages' });
    expect(question).not.toHaveProperty('note', expect.anything());
    expect(ended.items.find((item) => item.kind === 'tool' && item.id === 'c1')).toMatchObject({ status: 'stopped' });
    // An answered question of the same run is not offered again.
    const answered = apply(asked, { type: 'answer-accepted', interruptId: 'i1', resumed: false });
    expect(play([expiry], answered, 'run-1', deletion.length).items.find((item) => item.kind === 'question')).not.toHaveProperty('askAgain');
  });

  it('a question past its expiry by the page\'s clock has lapsed; the next expiry to wait for; a run to look at again while the server ends it', () => {
    const asked = play(deletion, apply(emptyThread('thread-1'), started('run-1', 'delete Languages')));
    const at = Date.parse('2026-12-05T13:00:00.000Z');
    const waiting = apply(asked, {
      type: 'run-summary',
      run: { id: 'run-1', message: 'delete Languages', error: null, status: 'interrupted', interrupts: [{ interruptId: 'i1', question: 'Delete?', askedBy: 'rover', answered: false, expiresAt: new Date(at).toISOString() }] },
    });
    const [question] = pendingQuestions(waiting);
    if (!question) throw new Error('The question is not pending.');
    expect(hasLapsed(question, at - 1)).toBe(false);
    expect(hasLapsed(question, at)).toBe(true);
    expect(hasLapsed({ ...question, state: 'answered' }, at + 1)).toBe(false);
    expect(nextExpiry(waiting, at - 1_000)).toBe(at);
    expect(nextExpiry(waiting, at)).toBeUndefined();

    const interrupt = { interruptId: 'i1', question: 'Delete?', askedBy: 'rover' as const, answered: false, expiresAt: new Date(at).toISOString() };
    const run = { status: 'interrupted' as const, interrupts: [interrupt] };
    expect(awaitsExpiry(run, at - 1)).toBe(false);
    expect(awaitsExpiry(run, at + 1_000)).toBe(true);
    // Bounded: a server that has not ended it a minute on is not polled for ever.
    expect(awaitsExpiry(run, at + EXPIRY_WAIT_MS)).toBe(false);
    expect(awaitsExpiry({ ...run, status: 'failed' }, at + 1_000)).toBe(false);
    expect(awaitsExpiry({ ...run, interrupts: [{ ...interrupt, answered: true }] }, at + 1_000)).toBe(false);
    expect(awaitsExpiry({ ...run, interrupts: [{ ...interrupt, expiresAt: null }] }, at + 1_000)).toBe(false);
  });

  it('an edit the server refused names its field; the question stays open, and the next answer clears the refusal', () => {
    const asked = play(deletion);
    const refused = apply(asked, { type: 'answer-sending', interruptId: 'i1', answer: 'yes' }, {
      type: 'answer-refused',
      interruptId: 'i1',
      message: 'Invalid arguments: comment: Too big.',
      state: 'pending',
      field: 'comment',
    });
    expect(pendingQuestions(refused)).toMatchObject([{ id: 'i1', note: 'Invalid arguments: comment: Too big.', noteField: 'comment' }]);
    const again = apply(refused, { type: 'answer-sending', interruptId: 'i1', answer: 'yes' });
    expect(again.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'sending', note: undefined, noteField: undefined });
  });

  it('an end the stream did not show is taken from the summary read after it: failed with its sentence, or stopped', () => {
    const running = apply(emptyThread('thread-1'), started('run-1', 'list staff'));
    const abandoned = apply(running, {
      type: 'run-summary',
      afterEvents: true,
      run: {
        id: 'run-1',
        status: 'failed',
        message: 'list staff',
        interrupts: [],
        error: 'The assistant stopped responding while working on this message, so it was stopped. Please send it again.',
        errorCode: 'RUN_ABANDONED',
      },
    });
    expect(abandoned.items.at(-1)).toMatchObject({ kind: 'error', code: 'RUN_ABANDONED', sendAgain: 'list staff' });

    const stopped = apply(running, { type: 'run-summary', afterEvents: true, run: { id: 'run-1', status: 'cancelled', message: 'list staff', interrupts: [], error: null } });
    expect(stopped.items.at(-1)).toEqual({ kind: 'stopped', id: 'run-1:stopped', runId: 'run-1' });
    // Before the events are replayed, a summary only places the run.
    const early = apply(emptyThread('thread-1'), { type: 'run-summary', run: { id: 'run-1', status: 'cancelled', message: 'list staff', interrupts: [], error: null } });
    expect(early.items.map((item) => item.kind)).toEqual(['user']);
  });

  it('questions from the summary: their expiry, and voided ones no longer answerable (stopped or expired)', () => {
    const asked = play(deletion);
    const question = { interruptId: 'i1', question: 'Delete the department with id d1?', askedBy: 'rover' as const, answered: false, confirm: true as const };
    const summary = { id: 'run-1', message: 'delete Languages', error: null };
    const waiting = apply(asked, {
      type: 'run-summary',
      afterEvents: true,
      run: { ...summary, status: 'interrupted', interrupts: [{ ...question, expiresAt: '2026-12-05T13:00:00.000Z' }] },
    });
    expect(pendingQuestions(waiting)).toMatchObject([{ id: 'i1', expiresAt: '2026-12-05T13:00:00.000Z', confirm: true }]);

    const voidedByStop = apply(waiting, {
      type: 'run-summary',
      run: { ...summary, status: 'cancelled', interrupts: [{ ...question, expiresAt: null, voided: true }] },
    });
    expect(voidedByStop.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'stopped' });
    const voidedByExpiry = apply(waiting, {
      type: 'run-summary',
      run: { ...summary, status: 'failed', interrupts: [{ ...question, expiresAt: null, voided: true }] },
    });
    expect(voidedByExpiry.items.find((item) => item.kind === 'question')).toMatchObject({ state: 'expired' });
  });
});

describe('expiryText', () => {
  const now = Date.parse('2026-12-04T12:00:00.000Z');
  const at = (ms: number) => new Date(now + ms).toISOString();
  it.each([
    [24 * 3_600_000 - 5_000, 'expires in 23 h'],
    [3 * 3_600_000, 'expires in 3 h'],
    [119 * 60_000, 'expires in 119 min'],
    [5 * 60_000 + 30_000, 'expires in 5 min'],
    [30_000, 'expires in less than a minute'],
    [3 * 24 * 3_600_000, 'expires in 3 days'],
    [0, 'has expired'],
    [-60_000, 'has expired'],
  ])('%i ms ahead: %s', (ms, text) => {
    expect(expiryText(at(ms), now)).toBe(text);
  });
});
