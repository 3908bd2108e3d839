import {
  ERROR_SENTENCES,
  agentRunEventSchema,
  type AgentRunEvent,
  type AgentRunRequest,
  type AgentRuntimeContext,
  type AgentSpeaker,
  type AgentToolRole,
} from '@naalya/agent-tools';
import { AIMessage } from '@langchain/core/messages';
import { MemorySaver } from '@langchain/langgraph';
import { fakeModel } from 'langchain';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { askUserArgsHash } from '../core/tools/local/ask-user.tool.js';
import { schoolContext } from '../core/tools/tool-context.fixture.js';
import { FakeToolCaller } from '../testing/fake-tool-caller.fixture.js';
import { AgentRunExecutor, RunEventPublishError, humanMessageId, type RunStepOutcome } from './agent-run.executor.js';

vi.mock('@naalya/agent-tools', async (importOriginal) => {
  const { withProbeTools } = await import('../testing/probe-registry.fixture.js');
  return withProbeTools(await importOriginal());
});

type Model = ReturnType<typeof fakeModel>;

const ROLE_PROBES: Record<AgentToolRole, { tool: string; event: string; args: Record<string, unknown> }> = {
  class_teacher: { tool: 'list_my_classes', event: 'list.my-classes', args: {} },
  subject_teacher: { tool: 'get_gradebook', event: 'get.gradebook', args: { classId: '0b3c5f0e-1a2b-4c3d-8e4f-5a6b7c8d9e01' } },
  dos: { tool: 'list_pending_lesson_plans', event: 'list.pending-lesson-plans', args: {} },
};

const call = (name: string, args: Record<string, unknown>, id: string) => ({ name, args, id, type: 'tool_call' as const });
const toolCalls = (...calls: ReturnType<typeof call>[]) => new AIMessage({ content: '', tool_calls: calls });

let runCounter = 0;
const contextFor = (overrides: Partial<AgentRuntimeContext> = {}, threadId = 'thread-exec'): AgentRuntimeContext => ({
  ...schoolContext(),
  capabilities: { isClassTeacher: true, isSubjectTeacher: true, isDirectorOfStudies: true },
  run: { runId: `run-${++runCounter}`, threadId },
  ...overrides,
});

type Harness = {
  caller: FakeToolCaller;
  models: Partial<Record<AgentSpeaker, Model>>;
  events: AgentRunEvent[];
  executor: AgentRunExecutor;
  step: (request: AgentRunRequest) => Promise<{ outcome: RunStepOutcome; events: AgentRunEvent[] }>;
};

const harness = (models: Partial<Record<AgentSpeaker, Model>>, checkpointer = new MemorySaver()): Harness => {
  const caller = new FakeToolCaller();
  const events: AgentRunEvent[] = [];
  const executor = new AgentRunExecutor({
    toolCaller: caller,
    checkpointer,
    events: { publish: async (event) => void events.push(event) },
    chatModel: (speaker) => models[speaker] ?? fakeModel().respond(new AIMessage(`unused ${speaker}`)),
    logger: { log: () => undefined, error: () => undefined, warn: () => undefined },
  });
  const step = async (request: AgentRunRequest) => {
    const before = events.length;
    const outcome = await executor.execute(request);
    return { outcome, events: events.slice(before) };
  };
  return { caller, models, events, executor, step };
};

const start = (context: AgentRuntimeContext, message: string): AgentRunRequest => ({ kind: 'start', context, message });
const types = (events: AgentRunEvent[]) => events.map((event) => event.type);
const finished = (events: AgentRunEvent[]) => events.findLast((event) => event.type === 'RUN_FINISHED');

describe('AgentRunExecutor: one run step as run events', () => {
  beforeEach(() => {
    runCounter = 0;
  });

  it('publishes RUN_STARTED, the tool call (start with event and args, end, result with hopMs), the text, RUN_FINISHED, in that order', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('Here are your staff.'));
    const { caller, step } = harness({ rover });
    caller.answer('list.staff', { data: [{ id: 's1', fullName: 'Ada Nakato' }], scopeContext: 'You can see staff across the whole school.' });
    const context = contextFor();

    const { outcome, events } = await step(start(context, 'show the staff'));

    expect(outcome).toBe('success');
    expect(types(events)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    for (const event of events) expect(agentRunEventSchema.safeParse(event).success).toBe(true);
    expect(events.every((event) => event.runId === context.run.runId && event.threadId === context.run.threadId)).toBe(true);
    expect(events[1]).toMatchObject({ toolCallId: 'tc-staff', toolCallName: 'list_staff', speaker: 'rover', event: 'list.staff', args: {} });
    expect(events[3]).toMatchObject({
      toolCallId: 'tc-staff',
      content: JSON.stringify({ data: [{ id: 's1', fullName: 'Ada Nakato' }], scopeContext: 'You can see staff across the whole school.' }),
    });
    expect((events[3] as { hopMs?: number }).hopMs).toEqual(expect.any(Number));
    expect(events[4]).toMatchObject({ speaker: 'rover' });
    expect(events[5]).toMatchObject({ delta: 'Here are your staff.' });
    expect(events[7]).toEqual({ runId: context.run.runId, threadId: context.run.threadId, type: 'RUN_FINISHED', outcome: 'success' });
  });

  it('a local tool shows TOOL_CALL_START without an event and its result without hopMs', async () => {
    const rover = fakeModel().respond(toolCalls(call('clock', {}, 'tc-clock'))).respond(new AIMessage('It is Wednesday.'));
    const { step } = harness({ rover });

    const { events } = await step(start(contextFor(), 'what day is it'));

    const startEvent = events.find((event) => event.type === 'TOOL_CALL_START');
    expect(startEvent).not.toHaveProperty('event');
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).not.toHaveProperty('hopMs');
  });

  it.each(Object.keys(ROLE_PROBES) as AgentToolRole[])(
    'routes to %s through the task tool: the specialist calls its own belt with the parent context, and speaks under its role',
    async (role) => {
      const probe = ROLE_PROBES[role];
      const rover = fakeModel()
        .respond(toolCalls(call('task', { description: 'do the thing', subagent_type: role }, `tc-task-${role}`)))
        .respond(new AIMessage(''));
      const specialist = fakeModel().respond(toolCalls(call(probe.tool, probe.args, `tc-${role}`))).respond(new AIMessage(`${role} answered.`));
      const { caller, step } = harness({ rover, [role]: specialist });
      const context = contextFor();

      const { outcome, events } = await step(start(context, 'do the thing'));

      expect(outcome).toBe('success');
      expect(caller.calls.map((recorded) => recorded.event)).toEqual([probe.event]);
      expect(caller.calls[0].payload.identity).toMatchObject({ sub: context.userDetails.id, schoolId: context.userDetails.schoolId });
      expect(events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === 'task')).toMatchObject({ speaker: 'rover', args: { subagent_type: role } });
      expect(events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === probe.tool)).toMatchObject({ speaker: role, event: probe.event });
      expect(events.find((event) => event.type === 'TEXT_MESSAGE_START')).toMatchObject({ speaker: role });
      expect(events.filter((event) => event.type === 'TEXT_MESSAGE_START')).toHaveLength(1);
    },
  );

  it('a specialist the caller is not eligible for is not registered: the task tool refuses it and nothing is called', async () => {
    const rover = fakeModel()
      .respond(toolCalls(call('task', { description: 'approve it', subagent_type: 'dos' }, 'tc-task-dos')))
      .respond(new AIMessage('I cannot do that.'));
    const { caller, step } = harness({ rover });
    const context = contextFor({ capabilities: { isClassTeacher: true, isSubjectTeacher: false, isDirectorOfStudies: false } });

    const { events } = await step(start(context, 'approve it'));

    expect(caller.calls).toEqual([]);
    const result = events.find((event) => event.type === 'TOOL_CALL_RESULT');
    expect(result && 'content' in result ? result.content : '').toMatch(/only allowed types are `class_teacher`/);
  });

  it('streamOnSuccess becomes CUSTOM with the auditId, after the call and before its result', async () => {
    const rover = fakeModel().respond(toolCalls(call('create_department', { name: 'Sciences' }, 'tc-create'))).respond(new AIMessage('Created.'));
    const { caller, step } = harness({ rover });
    caller.answer('create.department', { data: { id: 'dept-1' }, scopeContext: 'You can act across the whole school.', auditId: 'audit-7' });

    const { events } = await step(start(contextFor(), 'create a department called Sciences'));

    expect(types(events).slice(0, 5)).toEqual(['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_END', 'CUSTOM', 'TOOL_CALL_RESULT']);
    expect(events[3]).toMatchObject({
      type: 'CUSTOM',
      name: 'department.created',
      value: { label: 'Department "Sciences" created', resourceType: 'department', auditId: 'audit-7' },
    });
  });

  it('never publishes CUSTOM for an { error } result', async () => {
    const rover = fakeModel().respond(toolCalls(call('create_department', { name: 'Sciences' }, 'tc-create'))).respond(new AIMessage('No.'));
    const { caller, step } = harness({ rover });
    caller.answer('create.department', { error: 'Forbidden resource', code: 'PERMISSION_DENIED' });

    const { events } = await step(start(contextFor(), 'create a department called Sciences'));

    expect(types(events)).not.toContain('CUSTOM');
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({ content: JSON.stringify({ error: 'Forbidden resource', code: 'PERMISSION_DENIED' }) });
  });

  it('a malformed context is refused before any model or tool runs: RUN_ERROR, no call', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff')));
    const { caller, step } = harness({ rover });
    const context = contextFor();
    const broken = { ...context, userDetails: { ...context.userDetails, id: '' } } as AgentRuntimeContext;

    const { outcome, events } = await step(start(broken, 'show the staff'));

    expect(outcome).toBe('error');
    expect(caller.calls).toEqual([]);
    expect(rover.callCount).toBe(0);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', message: ERROR_SENTENCES.RUN_FAILED, code: 'RUN_FAILED' });
  });

  it('a model failure becomes RUN_ERROR with a safe message, never the error text', async () => {
    const rover = fakeModel().alwaysThrow(new Error('secret stack detail'));
    const { step } = harness({ rover });

    const { outcome, events } = await step(start(contextFor(), 'hello'));

    expect(outcome).toBe('error');
    expect(types(events)).toEqual(['RUN_STARTED', 'RUN_ERROR']);
    expect(JSON.stringify(events)).not.toContain('secret stack detail');
  });

  it('a failure to publish is thrown, so the message is not acknowledged as handled', async () => {
    const executor = new AgentRunExecutor({
      toolCaller: new FakeToolCaller(),
      checkpointer: new MemorySaver(),
      events: { publish: async () => Promise.reject(new Error('channel closed')) },
      chatModel: () => fakeModel().respond(new AIMessage('hi')),
      logger: { log: () => undefined, error: () => undefined, warn: () => undefined },
    });

    await expect(executor.execute(start(contextFor(), 'hello'))).rejects.toBeInstanceOf(RunEventPublishError);
  });
});

describe('ask_user: interrupts and resume', () => {
  const specialistAsksTwice = () =>
    fakeModel()
      .respond(toolCalls(call('list_my_classes', {}, 'tc-classes')))
      .respond(toolCalls(call('ask_user', { question: 'Which class?' }, 'tc-ask-1'), call('ask_user', { question: 'For which day?' }, 'tc-ask-2')))
      .respond((messages) => new AIMessage(`Angie got: ${messages.filter((message) => message.type === 'tool').map((message) => String(message.content)).join(' | ')}`));

  it('ends the step with RUN_FINISHED interrupt carrying each question, its asker, tool call and args hash', async () => {
    const rover = fakeModel().respond(toolCalls(call('task', { description: 'attendance', subagent_type: 'class_teacher' }, 'tc-task')));
    const { step } = harness({ rover, class_teacher: specialistAsksTwice() });

    const { outcome, events } = await step(start(contextFor(), 'record attendance'));

    expect(outcome).toBe('interrupt');
    const finish = finished(events);
    expect(finish).toMatchObject({ outcome: 'interrupt' });
    const interrupts = finish && finish.type === 'RUN_FINISHED' ? (finish.interrupts ?? []) : [];
    expect(interrupts).toEqual([
      { interruptId: expect.any(String), question: 'Which class?', askedBy: 'class_teacher', toolCallId: 'tc-ask-1', argsHash: askUserArgsHash({ question: 'Which class?' }) },
      { interruptId: expect.any(String), question: 'For which day?', askedBy: 'class_teacher', toolCallId: 'tc-ask-2', argsHash: askUserArgsHash({ question: 'For which day?' }) },
    ]);
    expect(types(events)).not.toContain('RUN_ERROR');
  });

  it('resumes with several answers by interrupt id, and the completed tool call is not made again', async () => {
    const rover = fakeModel()
      .respond(toolCalls(call('task', { description: 'attendance', subagent_type: 'class_teacher' }, 'tc-task')))
      .respond(new AIMessage(''));
    const { caller, step } = harness({ rover, class_teacher: specialistAsksTwice() });
    const first = await step(start(contextFor({}, 'thread-resume'), 'record attendance'));
    const pending = (finished(first.events) as Extract<AgentRunEvent, { type: 'RUN_FINISHED' }>).interrupts ?? [];
    expect(caller.callsTo('list.my-classes')).toHaveLength(1);

    const answers = Object.fromEntries(pending.map((interrupt) => [interrupt.interruptId, interrupt.question === 'Which class?' ? 'P5 Blue' : 'today']));
    const second = await step({ kind: 'resume', context: contextFor({}, 'thread-resume'), answers });

    expect(second.outcome).toBe('success');
    expect(caller.callsTo('list.my-classes')).toHaveLength(1);
    const results = second.events.filter((event) => event.type === 'TOOL_CALL_RESULT');
    expect(results.map((event) => event.type === 'TOOL_CALL_RESULT' && event.toolCallId)).toEqual(['tc-ask-1', 'tc-ask-2', 'tc-task']);
    const text = second.events.find((event) => event.type === 'TEXT_MESSAGE_CONTENT');
    expect(text).toMatchObject({ delta: expect.stringContaining('{"answer":"P5 Blue"} | {"answer":"today"}') });
    expect(second.events.find((event) => event.type === 'TEXT_MESSAGE_START')).toMatchObject({ speaker: 'class_teacher' });
  });

  it("Rover's own question is attributed to Rover", async () => {
    const rover = fakeModel().respond(toolCalls(call('ask_user', { question: 'Which campus?' }, 'tc-ask')));
    const { step } = harness({ rover });

    const { events } = await step(start(contextFor(), 'hello'));

    expect(finished(events)).toMatchObject({ outcome: 'interrupt', interrupts: [{ question: 'Which campus?', askedBy: 'rover', toolCallId: 'tc-ask' }] });
  });

  it('a new message while a question is pending is refused with RUN_ERROR, and the question stays pending', async () => {
    const rover = fakeModel().respond(toolCalls(call('ask_user', { question: 'Which campus?' }, 'tc-ask')));
    const { step } = harness({ rover });
    await step(start(contextFor({}, 'thread-busy'), 'hello'));

    const { outcome, events } = await step(start(contextFor({}, 'thread-busy'), 'something else'));

    expect(outcome).toBe('error');
    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', message: ERROR_SENTENCES.WAITING_FOR_ANSWER, code: 'WAITING_FOR_ANSWER' });
    expect(rover.callCount).toBe(1);
  });

  it('answers that match no pending question report the questions still pending, without running', async () => {
    const rover = fakeModel().respond(toolCalls(call('ask_user', { question: 'Which campus?' }, 'tc-ask')));
    const { step } = harness({ rover });
    await step(start(contextFor({}, 'thread-stale'), 'hello'));

    const { outcome, events } = await step({ kind: 'resume', context: contextFor({}, 'thread-stale'), answers: { 'not-a-question': 'x' } });

    expect(outcome).toBe('interrupt');
    expect(types(events)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
    expect(rover.callCount).toBe(1);
  });

  it('a resume for a conversation with nothing pending is refused', async () => {
    const { step } = harness({});

    const { events } = await step({ kind: 'resume', context: contextFor({}, 'thread-empty'), answers: { someone: 'x' } });

    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', message: ERROR_SENTENCES.NOTHING_PENDING, code: 'NOTHING_PENDING' });
  });
});

describe('redelivery: a run step is safe to repeat', () => {
  it('a start redelivered after it finished reports the outcome, without adding the message or calling anything again', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('Done.'));
    const checkpointer = new MemorySaver();
    const { caller, step } = harness({ rover }, checkpointer);
    const request = start(contextFor({}, 'thread-redelivered'), 'show the staff');
    await step(request);

    const again = await step(request);

    expect(types(again.events)).toEqual(['RUN_STARTED', 'RUN_FINISHED']);
    expect(caller.calls).toHaveLength(1);
    expect(rover.callCount).toBe(2);
    const state = await checkpointer.getTuple({ configurable: { thread_id: 'thread-redelivered' } });
    const messages = (state?.checkpoint.channel_values['messages'] ?? []) as Array<{ id?: string }>;
    expect(messages.filter((message) => message.id === humanMessageId(request.context.run.runId))).toHaveLength(1);
  });

  it('a start redelivered while its question is pending reports the same question again', async () => {
    const rover = fakeModel().respond(toolCalls(call('ask_user', { question: 'Which campus?' }, 'tc-ask')));
    const { step } = harness({ rover });
    const request = start(contextFor({}, 'thread-redelivered-ask'), 'hello');
    const first = await step(request);

    const again = await step(request);

    expect(finished(again.events)).toEqual(finished(first.events));
  });
});
