import {
  ERROR_SENTENCES,
  agentRunEventSchema,
  type AgentRunEvent,
  type AgentRunLeaseReply,
  type AgentRunRequest,
  type AgentRuntimeContext,
  type AgentSpeaker,
  type AgentToolRole,
  type RunInterrupt,
} from '@naalya/agent-tools';
import { setTimeout as sleep } from 'node:timers/promises';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { MemorySaver } from '@langchain/langgraph';
import { fakeModel } from 'langchain';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { askUserArgsHash } from '../core/tools/local/ask-user.tool.js';
import { schoolContext } from '../core/tools/tool-context.fixture.js';
import { acceptedByAgUi } from '../testing/ag-ui-events.fixture.js';
import { FakeRunLeases, TEST_DISPATCH_TOKEN } from '../testing/fake-run-leases.fixture.js';
import { FakeToolCaller } from '../testing/fake-tool-caller.fixture.js';
import { AgentRunExecutor, RunEventPublishError, humanMessageId, type RunEventMeta, type RunStepOutcome } from './agent-run.executor.js';
import { RunLeaseLostError } from './step-lease.js';
import { DECLINED_REPLY, malformedArgumentsMessage } from '../core/graph/untrusted-reply.middleware.js';
import { FakeRunUsage } from '../testing/fake-run-usage.fixture.js';

vi.mock('@naalya/agent-tools', async (importOriginal) => {
  const { withProbeTools } = await import('../testing/probe-registry.fixture.js');
  return withProbeTools(await importOriginal());
});

type Model = ReturnType<typeof fakeModel>;
/** A fake model, or any other chat model a test scripts (the executor takes any). */
type ChatModelLike = Model | BaseChatModel;

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
  dispatchToken: TEST_DISPATCH_TOKEN,
  ...overrides,
});

type Harness = {
  caller: FakeToolCaller;
  models: Partial<Record<AgentSpeaker, Model>>;
  events: AgentRunEvent[];
  /** What each event was published with, index for index. */
  metas: RunEventMeta[];
  leases: FakeRunLeases;
  usage: FakeRunUsage;
  executor: AgentRunExecutor;
  step: (request: AgentRunRequest) => Promise<{ outcome: RunStepOutcome; events: AgentRunEvent[] }>;
};

const harness = (
  models: Partial<Record<AgentSpeaker, ChatModelLike>>,
  checkpointer = new MemorySaver(),
  { leases = new FakeRunLeases(), caller = new FakeToolCaller(), usage = new FakeRunUsage() }: { leases?: FakeRunLeases; caller?: FakeToolCaller; usage?: FakeRunUsage } = {},
): Harness => {
  const events: AgentRunEvent[] = [];
  const metas: RunEventMeta[] = [];
  const executor = new AgentRunExecutor({
    toolCaller: caller,
    checkpointer,
    events: {
      publish: async (batch, meta) => {
        for (const event of batch.events) {
          events.push(event);
          metas.push(meta);
        }
      },
    },
    leases,
    usage,
    chatModel: (speaker) => (models[speaker] ?? fakeModel().respond(new AIMessage(`unused ${speaker}`))) as Model,
    logger: { log: () => undefined, error: () => undefined, warn: () => undefined },
  });
  const step = async (request: AgentRunRequest) => {
    const before = events.length;
    const outcome = await executor.execute(request);
    return { outcome, events: events.slice(before) };
  };
  return { caller, models: models as Partial<Record<AgentSpeaker, Model>>, events, metas, leases, usage, executor, step };
};

const start = (context: AgentRuntimeContext, message: string): AgentRunRequest => ({ kind: 'start', context, message });
const types = (events: AgentRunEvent[]) => events.map((event) => event.type);
const finished = (events: AgentRunEvent[]) => events.findLast((event) => event.type === 'RUN_FINISHED');
const interruptsOf = (events: AgentRunEvent[]): RunInterrupt[] => {
  const finish = finished(events);
  return finish?.type === 'RUN_FINISHED' && finish.outcome.type === 'interrupt' ? finish.outcome.interrupts : [];
};
/** A tool call's argument deltas, concatenated. */
const argsOf = (events: AgentRunEvent[], toolCallId: string) =>
  events.map((event) => (event.type === 'TOOL_CALL_ARGS' && event.toolCallId === toolCallId ? event.delta : '')).join('');

const expectAcceptedByAgUi = async (events: AgentRunEvent[]) => expect(await acceptedByAgUi(events)).toBe(events.length);

describe('AgentRunExecutor: one run step as run events', () => {
  beforeEach(() => {
    runCounter = 0;
  });

  it('publishes RUN_STARTED, the tool call (start with its event, args, end, result with hopMs), the text, RUN_FINISHED, in that order', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('Here are your staff.'));
    const { caller, step } = harness({ rover });
    caller.answer('list.staff', { data: [{ id: 's1', fullName: 'Ada Nakato' }], scopeContext: 'You can see staff across the whole school.' });
    const context = contextFor();

    const { outcome, events } = await step(start(context, 'show the staff'));

    expect(outcome).toBe('success');
    expect(types(events)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    for (const event of events) expect(agentRunEventSchema.safeParse(event).success).toBe(true);
    expect(events.every((event) => event.runId === context.run.runId && event.threadId === context.run.threadId)).toBe(true);
    expect(events[1]).toMatchObject({ toolCallId: 'tc-staff', toolCallName: 'list_staff', metadata: { event: 'list.staff' } });
    expect(events[1]).not.toHaveProperty('subagentRunId');
    expect(events[2]).toMatchObject({ toolCallId: 'tc-staff', delta: '{}' });
    expect(events[4]).toMatchObject({
      toolCallId: 'tc-staff',
      role: 'tool',
      content: JSON.stringify({ data: [{ id: 's1', fullName: 'Ada Nakato' }], scopeContext: 'You can see staff across the whole school.' }),
      metadata: { hopMs: expect.any(Number) },
    });
    expect(events[5]).toMatchObject({ role: 'assistant', name: 'rover' });
    expect(events[6]).toMatchObject({ delta: 'Here are your staff.' });
    expect(events[8]).toEqual({ runId: context.run.runId, threadId: context.run.threadId, timestamp: expect.any(Number), type: 'RUN_FINISHED', outcome: { type: 'success' } });
  });

  it('a local tool shows TOOL_CALL_START without an event and its result without hopMs', async () => {
    const rover = fakeModel().respond(toolCalls(call('clock', {}, 'tc-clock'))).respond(new AIMessage('It is Wednesday.'));
    const { step } = harness({ rover });

    const { events } = await step(start(contextFor(), 'what day is it'));

    const startEvent = events.find((event) => event.type === 'TOOL_CALL_START');
    expect(startEvent).toMatchObject({ toolCallName: 'clock' });
    expect(startEvent).not.toHaveProperty('metadata');
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).not.toHaveProperty('metadata');
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
      const task = events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === 'task');
      expect(task).not.toHaveProperty('subagentRunId');
      expect(JSON.parse(argsOf(events, `tc-task-${role}`))).toMatchObject({ subagent_type: role });
      const opened = events.filter((event) => event.type === 'SUBAGENT_STARTED');
      expect(opened).toEqual([expect.objectContaining({ name: role, parentToolCallId: `tc-task-${role}`, subagentRunId: expect.any(String) })]);
      const subagentRunId = opened[0]?.type === 'SUBAGENT_STARTED' ? opened[0].subagentRunId : '';
      expect(events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === probe.tool)).toMatchObject({ subagentRunId, metadata: { event: probe.event } });
      expect(events.find((event) => event.type === 'TEXT_MESSAGE_START')).toMatchObject({ name: role, subagentRunId });
      expect(events.filter((event) => event.type === 'TEXT_MESSAGE_START')).toHaveLength(1);
      // The specialist has finished before Rover gets the task's result.
      const finishedAt = events.findIndex((event) => event.type === 'SUBAGENT_FINISHED');
      expect(events[finishedAt]).toMatchObject({ subagentRunId, outcome: { type: 'success' } });
      expect(events.findIndex((event) => event.type === 'TOOL_CALL_RESULT' && event.toolCallId === `tc-task-${role}`)).toBe(finishedAt + 1);
      await expectAcceptedByAgUi(events);
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

    expect(types(events).slice(0, 6)).toEqual(['RUN_STARTED', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END', 'CUSTOM', 'TOOL_CALL_RESULT']);
    expect(events[4]).toMatchObject({
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
      leases: new FakeRunLeases(),
      usage: new FakeRunUsage(),
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
    expect(finish).toMatchObject({ outcome: { type: 'interrupt' } });
    const subagent = events.find((event) => event.type === 'SUBAGENT_STARTED');
    const subagentRunId = subagent?.type === 'SUBAGENT_STARTED' ? subagent.subagentRunId : 'none';
    const question = (message: string, toolCallId: string) => ({
      id: expect.any(String),
      reason: 'question',
      message,
      toolCallId,
      responseSchema: { type: 'string', maxLength: 4_000 },
      subagentRunId,
      metadata: { askedBy: 'class_teacher', argsHash: askUserArgsHash({ question: message }) },
    });
    expect(interruptsOf(events)).toEqual([question('Which class?', 'tc-ask-1'), question('For which day?', 'tc-ask-2')]);
    // The specialist is suspended on both questions; the conversation is snapshot before the run pauses.
    expect(types(events).slice(-3)).toEqual(['SUBAGENT_FINISHED', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED']);
    expect(events.at(-3)).toMatchObject({ subagentRunId, outcome: { type: 'suspended', interruptIds: interruptsOf(events).map((interrupt) => interrupt.id) } });
    expect(events.at(-2)).toMatchObject({
      messages: [
        { role: 'user', content: 'record attendance' },
        { role: 'assistant', name: 'rover', toolCalls: [{ id: 'tc-task', function: { name: 'task' } }] },
      ],
    });
    expect(types(events)).not.toContain('RUN_ERROR');
    await expectAcceptedByAgUi(events);
  });

  it('resumes with several answers by interrupt id, and the completed tool call is not made again', async () => {
    const rover = fakeModel()
      .respond(toolCalls(call('task', { description: 'attendance', subagent_type: 'class_teacher' }, 'tc-task')))
      .respond(new AIMessage(''));
    const { caller, step } = harness({ rover, class_teacher: specialistAsksTwice() });
    const first = await step(start(contextFor({}, 'thread-resume'), 'record attendance'));
    const pending = interruptsOf(first.events);
    expect(caller.callsTo('list.my-classes')).toHaveLength(1);

    const answers = Object.fromEntries(pending.map((interrupt) => [interrupt.id, interrupt.message === 'Which class?' ? 'P5 Blue' : 'today']));
    const second = await step({ kind: 'resume', context: contextFor({}, 'thread-resume'), answers });

    expect(second.outcome).toBe('success');
    expect(caller.callsTo('list.my-classes')).toHaveLength(1);
    const results = second.events.filter((event) => event.type === 'TOOL_CALL_RESULT');
    expect(results.map((event) => event.type === 'TOOL_CALL_RESULT' && event.toolCallId)).toEqual(['tc-ask-1', 'tc-ask-2', 'tc-task']);
    const text = second.events.find((event) => event.type === 'TEXT_MESSAGE_CONTENT');
    expect(text).toMatchObject({ delta: expect.stringContaining('{"answer":"P5 Blue"} | {"answer":"today"}') });
    expect(second.events.find((event) => event.type === 'TEXT_MESSAGE_START')).toMatchObject({ name: 'class_teacher', subagentRunId: expect.any(String) });
    await expectAcceptedByAgUi([...first.events, ...second.events]);
  });

  it("Rover's own question is attributed to Rover", async () => {
    const rover = fakeModel().respond(toolCalls(call('ask_user', { question: 'Which campus?' }, 'tc-ask')));
    const { step } = harness({ rover });

    const { events } = await step(start(contextFor(), 'hello'));

    expect(interruptsOf(events)).toEqual([expect.objectContaining({ message: 'Which campus?', toolCallId: 'tc-ask', metadata: expect.objectContaining({ askedBy: 'rover' }) })]);
    expect(interruptsOf(events)[0]).not.toHaveProperty('subagentRunId');
    expect(types(events)).not.toContain('SUBAGENT_STARTED');
  });

  it('a new message after a question the server voided (a cancel, interrupt, an expiry) runs, past the unanswered question', async () => {
    const rover = fakeModel()
      .respond(toolCalls(call('ask_user', { question: 'Which campus?' }, 'tc-ask')))
      .respond(new AIMessage('Here is something else.'));
    const { step } = harness({ rover });
    await step(start(contextFor({}, 'thread-busy'), 'hello'));

    const { outcome, events } = await step(start(contextFor({}, 'thread-busy'), 'something else'));

    expect(outcome).toBe('success');
    expect(finished(events)).toMatchObject({ outcome: { type: 'success' } });
    expect(rover.callCount).toBe(2);
  });

  it('answers that match no pending question report the questions still pending, without running', async () => {
    const rover = fakeModel().respond(toolCalls(call('ask_user', { question: 'Which campus?' }, 'tc-ask')));
    const { step } = harness({ rover });
    await step(start(contextFor({}, 'thread-stale'), 'hello'));

    const { outcome, events } = await step({ kind: 'resume', context: contextFor({}, 'thread-stale'), answers: { 'not-a-question': 'x' } });

    expect(outcome).toBe('interrupt');
    expect(types(events)).toEqual(['RUN_STARTED', 'MESSAGES_SNAPSHOT', 'RUN_FINISHED']);
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

    expect(finished(again.events)).toEqual({ ...finished(first.events), timestamp: expect.any(Number) });
  });
});

/** Records every call, then never answers: a hop that hangs until the step stops waiting for it. */
class HangingToolCaller extends FakeToolCaller {
  override async call(...args: Parameters<FakeToolCaller['call']>): ReturnType<FakeToolCaller['call']> {
    await super.call(...args);
    return new Promise<never>(() => undefined);
  }
}

/** Records every call, then answers after delayMs. */
class SlowToolCaller extends FakeToolCaller {
  constructor(private readonly delayMs: number) {
    super();
  }

  override async call(...args: Parameters<FakeToolCaller['call']>): ReturnType<FakeToolCaller['call']> {
    const result = await super.call(...args);
    await sleep(this.delayMs);
    return result;
  }
}

/** A chat model that answers nothing until its call's signal aborts: shows the step's signal reaches the model call. */
class SignalBoundModel extends BaseChatModel {
  readonly signals: Array<AbortSignal | undefined> = [];
  readonly abortReasons: unknown[] = [];

  constructor() {
    super({});
  }

  _llmType(): string {
    return 'signal-bound';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(_messages: BaseMessage[], options: this['ParsedCallOptions']): Promise<ChatResult> {
    const { signal } = options;
    this.signals.push(signal);
    if (!signal) throw new Error('no signal reached the model call');
    return new Promise<ChatResult>((_resolve, reject) => {
      signal.addEventListener(
        'abort',
        () => {
          this.abortReasons.push(signal.reason);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }
}

const LEASE_REFUSED = ['superseded', 'cancelled', 'ended', 'refused', 'model_not_allowed', 'token_budget_spent'] as const;

describe('the run lease: the server decides whether a step runs, and when it stops', () => {
  it.each(LEASE_REFUSED)('a claim refused as %s runs nothing and publishes nothing: no checkpoint read, no model, no tool', async (reason) => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff')));
    const checkpointer = new MemorySaver();
    const reads = vi.spyOn(checkpointer, 'getTuple');
    const leases = new FakeRunLeases().answer('claim', { granted: false, reason });
    const { caller, step } = harness({ rover }, checkpointer, { leases });

    const { outcome, events } = await step(start(contextFor(), 'show the staff'));

    expect(outcome).toBe('dropped');
    expect(events).toEqual([]);
    expect(reads).not.toHaveBeenCalled();
    expect(rover.callCount).toBe(0);
    expect(caller.calls).toEqual([]);
    expect(leases.requests.map(({ action, dispatchToken }) => ({ action, dispatchToken }))).toEqual([{ action: 'claim', dispatchToken: TEST_DISPATCH_TOKEN }]);
  });

  it('a copy of a step this worker is running (redelivered after its channel dropped) waits for it, then claims: refused once the step ended, nothing published twice', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('Here are your staff.'));
    const leases = new FakeRunLeases().answer('claim', { granted: true, leaseMs: 30_000 }, { granted: false, reason: 'ended' });
    const { events, step } = harness({ rover }, new MemorySaver(), { leases, caller: new SlowToolCaller(200) });
    const request = start(contextFor(), 'show the staff');

    const first = step(request);
    await sleep(50);
    const copy = step(request);
    await sleep(50);
    // The copy has not claimed while the first runs.
    expect(leases.requestsOf('claim')).toHaveLength(1);

    expect((await first).outcome).toBe('success');
    expect((await copy).outcome).toBe('dropped');
    // Only the first run's events: one RUN_STARTED, one RUN_FINISHED.
    expect(types(events).filter((type) => type === 'RUN_STARTED')).toHaveLength(1);
    expect(types(events).filter((type) => type === 'RUN_FINISHED')).toHaveLength(1);
    const claims = leases.requestsOf('claim');
    expect(claims).toHaveLength(2);
    expect(claims[1]?.at).toBeGreaterThanOrEqual(leases.requestsOf('release')[0]?.at ?? Infinity);
  });

  it('a copy of a step whose first run failed without ending it claims once that one has thrown, and completes the step', async () => {
    const rover = fakeModel().respond(new AIMessage('Hello.'));
    const events: AgentRunEvent[] = [];
    let publishes = 0;
    const executor = new AgentRunExecutor({
      toolCaller: new FakeToolCaller(),
      checkpointer: new MemorySaver(),
      events: {
        publish: async (batch) => {
          // The first run's first publish fails after a while (its connection dropped): that run throws.
          if (publishes++ === 0) {
            await sleep(100);
            throw new Error('disconnected');
          }
          events.push(...batch.events);
        },
      },
      leases: new FakeRunLeases(),
      usage: new FakeRunUsage(),
      chatModel: () => rover,
      logger: { log: () => undefined, error: () => undefined, warn: () => undefined },
    });
    const request = start(contextFor(), 'hello');

    const first = executor.execute(request);
    await sleep(30);
    const copy = executor.execute(request);

    await expect(first).rejects.toBeInstanceOf(RunEventPublishError);
    expect(await copy).toBe('success');
    expect(types(events)).toEqual(['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'RUN_FINISHED']);
  });

  it('a claim that got no answer is asked again, and a later answer runs the step (the broker was coming back)', async () => {
    const rover = fakeModel().respond(new AIMessage('hi'));
    const leases = new FakeRunLeases().answer('claim', new Error('not connected to RabbitMQ'));
    const { step } = harness({ rover }, new MemorySaver(), { leases });

    const { outcome } = await step(start(contextFor(), 'hello'));

    expect(outcome).toBe('success');
    expect(leases.requestsOf('claim')).toHaveLength(2);
  });

  it('a claim that gets no answer for the whole claim timeout (timeout, no connection, an unreadable reply) drops the step the same way', async () => {
    const rover = fakeModel().respond(new AIMessage('hi'));
    const leases = new FakeRunLeases().answer('claim', ...Array.from({ length: 20 }, () => new Error('no reply within 15000 ms')));
    const { step } = harness({ rover }, new MemorySaver(), { leases });

    const { outcome, events } = await step(start(contextFor(), 'hello'));

    expect(outcome).toBe('dropped');
    expect(events).toEqual([]);
    expect(rover.callCount).toBe(0);
    expect(leases.requestsOf('release')).toEqual([]);
  });

  it('a step with no dispatch token cannot claim a lease: dropped, nothing asked, nothing published', async () => {
    const rover = fakeModel().respond(new AIMessage('hi'));
    const { leases, step } = harness({ rover });
    const { dispatchToken: _dropped, ...context } = contextFor();

    const { outcome, events } = await step(start(context, 'hello'));

    expect(outcome).toBe('dropped');
    expect(events).toEqual([]);
    expect(leases.requests).toEqual([]);
    expect(rover.callCount).toBe(0);
  });

  it('a granted step claims before it runs, publishes every event with its dispatch token, and releases the lease when it ends', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('Here are your staff.'));
    const { events, metas, leases, step } = harness({ rover });

    const { outcome } = await step(start(contextFor(), 'show the staff'));

    expect(outcome).toBe('success');
    expect(events.length).toBeGreaterThan(2);
    expect(metas).toHaveLength(events.length);
    expect(metas.every((meta) => meta.dispatchToken === TEST_DISPATCH_TOKEN)).toBe(true);
    expect(leases.requests.map(({ action }) => action)).toEqual(['claim', 'release']);
    expect(leases.requests.every(({ dispatchToken }) => dispatchToken === TEST_DISPATCH_TOKEN)).toBe(true);
  });

  it('a step that outlasts a third of its lease renews it every third, and stops renewing when it ends', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('Done.'));
    const leases = new FakeRunLeases(300);
    const { step } = harness({ rover }, new MemorySaver(), { leases, caller: new SlowToolCaller(450) });

    const { outcome, events } = await step(start(contextFor(), 'show the staff'));

    expect(outcome).toBe('success');
    expect(finished(events)).toMatchObject({ outcome: { type: 'success' } });
    const renews = leases.requestsOf('renew');
    expect(renews.length).toBeGreaterThanOrEqual(2);
    // Every 100 ms (a third of 300), each renew given up within that third so none overlap.
    expect(renews.every(({ timeoutMs }) => timeoutMs === 100)).toBe(true);
    for (let index = 1; index < renews.length; index += 1) expect(renews[index].at - renews[index - 1].at).toBeGreaterThanOrEqual(95);
    expect(renews[0].at - leases.requestsOf('claim')[0].at).toBeGreaterThanOrEqual(95);
    const count = leases.requests.length;
    await sleep(250);
    expect(leases.requests.length).toBe(count);
    expect(leases.requests.at(-1)?.action).toBe('release');
  });

  it.each(['cancelled', 'superseded', 'ended'] as const)(
    'a renew refused as %s aborts the graph mid-step: the waiting tool call stops, no model is called again, nothing more is published',
    async (reason) => {
      const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('never said'));
      const caller = new HangingToolCaller();
      // Renewed every 300 ms, refused once the tool call is waiting.
      const refuseOnceCalled = async (): Promise<AgentRunLeaseReply> => (caller.calls.length > 0 ? { granted: false, reason } : { granted: true, leaseMs: 900 });
      const leases = new FakeRunLeases(900).answer('renew', ...Array.from({ length: 30 }, () => refuseOnceCalled));
      const { events, step } = harness({ rover }, new MemorySaver(), { leases, caller });

      const { outcome } = await step(start(contextFor(), 'show the staff'));

      expect(outcome).toBe('stopped');
      expect(caller.callsTo('list.staff')).toHaveLength(1);
      expect(rover.callCount).toBe(1);
      await sleep(100);
      expect(types(events)).not.toContain('TOOL_CALL_RESULT');
      expect(types(events)).not.toContain('RUN_ERROR');
      expect(types(events)).not.toContain('RUN_FINISHED');
      expect(types(events)[0]).toBe('RUN_STARTED');
      expect(leases.requests.at(-1)?.action).toBe('renew');
      expect(leases.requestsOf('release')).toEqual([]);
    },
  );

  it('a cancel while a specialist waits on its tool stops the specialist and Rover: nothing more is published', async () => {
    const rover = fakeModel()
      .respond(toolCalls(call('task', { description: 'classes', subagent_type: 'class_teacher' }, 'tc-task')))
      .respond(new AIMessage('never said by Rover'));
    const specialist = fakeModel().respond(toolCalls(call('list_my_classes', {}, 'tc-classes'))).respond(new AIMessage('never said by Angie'));
    const caller = new HangingToolCaller();
    const cancelOnceCalled = async (): Promise<AgentRunLeaseReply> =>
      caller.calls.length > 0 ? { granted: false, reason: 'cancelled' } : { granted: true, leaseMs: 900 };
    const leases = new FakeRunLeases(900).answer('renew', ...Array.from({ length: 30 }, () => cancelOnceCalled));
    const { events, step } = harness({ rover, class_teacher: specialist }, new MemorySaver(), { leases, caller });

    const { outcome } = await step(start(contextFor(), 'list my classes'));

    expect(outcome).toBe('stopped');
    expect(caller.callsTo('list.my-classes')).toHaveLength(1);
    await sleep(100);
    expect(specialist.callCount).toBe(1);
    expect(rover.callCount).toBe(1);
    expect(types(events)).not.toContain('TOOL_CALL_RESULT');
    expect(types(events)).not.toContain('TEXT_MESSAGE_START');
    expect(types(events)).not.toContain('RUN_FINISHED');
    expect(types(events)).not.toContain('RUN_ERROR');
  });

  it('after a cancel mid-call, the next message on the thread runs: the model is told the stopped call has no result', async () => {
    const seen: BaseMessage[][] = [];
    const rover = fakeModel()
      .respond(toolCalls(call('create_department', { name: 'Sciences' }, 'tc-create')))
      .respond((messages) => {
        seen.push(messages);
        return new AIMessage('Hello again.');
      });
    const caller = new HangingToolCaller();
    const cancelOnceCalled = async (): Promise<AgentRunLeaseReply> =>
      caller.calls.length > 0 ? { granted: false, reason: 'cancelled' } : { granted: true, leaseMs: 900 };
    const leases = new FakeRunLeases(900).answer('renew', ...Array.from({ length: 30 }, () => cancelOnceCalled));
    const checkpointer = new MemorySaver();
    const first = harness({ rover }, checkpointer, { leases, caller });
    expect((await first.step(start(contextFor({}, 'thread-after-cancel'), 'create a department called Sciences'))).outcome).toBe('stopped');

    const second = harness({ rover }, checkpointer);
    const { outcome, events } = await second.step(start(contextFor({}, 'thread-after-cancel'), 'hello again'));

    expect(outcome).toBe('success');
    expect(finished(events)).toMatchObject({ outcome: { type: 'success' } });
    const sent = seen[0] ?? [];
    const stopped = sent.findIndex((message) => message.type === 'tool');
    expect(sent[stopped - 1]).toMatchObject({ tool_calls: [expect.objectContaining({ id: 'tc-create' })] });
    expect(String(sent[stopped]?.content)).toContain('was stopped before its result came back');
    expect(sent.at(-1)).toMatchObject({ content: 'hello again' });
  });

  it('a cancel reaches a model call in flight through its signal, and the step ends with nothing more published', async () => {
    const rover = new SignalBoundModel();
    const cancelOnceCalled = async (): Promise<AgentRunLeaseReply> =>
      rover.signals.length > 0 ? { granted: false, reason: 'cancelled' } : { granted: true, leaseMs: 900 };
    const leases = new FakeRunLeases(900).answer('renew', ...Array.from({ length: 30 }, () => cancelOnceCalled));
    const { events, step } = harness({ rover }, new MemorySaver(), { leases });

    const { outcome } = await step(start(contextFor(), 'hello'));

    expect(outcome).toBe('stopped');
    expect(rover.signals).toHaveLength(1);
    expect(rover.signals[0]?.aborted).toBe(true);
    expect(rover.abortReasons[0]).toBeInstanceOf(RunLeaseLostError);
    expect((rover.abortReasons[0] as RunLeaseLostError).loss).toBe('cancelled');
    await sleep(50);
    expect(types(events)).toEqual(['RUN_STARTED']);
  });

  it('renews that get no answer stop the step once its lease would have expired, without RUN_ERROR', async () => {
    const rover = new SignalBoundModel();
    const leases = new FakeRunLeases(900).answer('renew', ...Array.from({ length: 10 }, () => new Error('no reply within 300 ms')));
    const { events, step } = harness({ rover }, new MemorySaver(), { leases });

    const { outcome } = await step(start(contextFor(), 'hello'));

    expect(outcome).toBe('stopped');
    expect((rover.abortReasons[0] as RunLeaseLostError).loss).toBe('expired');
    // Renewing stops with the lease: at most its three chances (900 ms, renewed every third of it), not all ten
    // failures queued. Usually two: the second failure lands exactly where one more interval would reach the expiry
    // (600 + 300 = 900), and a timer that fires a millisecond early by Date.now (as Node's may) lets a third go.
    // CI saw 3 once.
    expect(leases.requestsOf('renew').length).toBeLessThanOrEqual(3);
    expect(types(events)).toEqual(['RUN_STARTED']);
    expect(leases.requestsOf('release')).toEqual([]);
  });

  it('a process frozen past its lease (SIGSTOP) writes no checkpoint and publishes nothing when it wakes, before any renew answers', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('never said'));
    let wokeAt = Number.POSITIVE_INFINITY;
    // Renews are granted until the freeze; the one after it says the step was taken over, after a network's delay.
    const renew = async (): Promise<AgentRunLeaseReply> => {
      if (Date.now() < wokeAt) return { granted: true, leaseMs: 600 };
      await sleep(30);
      return { granted: false, reason: 'superseded' };
    };
    const leases = new FakeRunLeases(600).answer('renew', ...Array.from({ length: 50 }, () => renew));
    const checkpointer = new MemorySaver();
    const writes: number[] = [];
    const put = checkpointer.put.bind(checkpointer);
    const putWrites = checkpointer.putWrites.bind(checkpointer);
    vi.spyOn(checkpointer, 'put').mockImplementation(async (...args) => (writes.push(Date.now()), put(...args)));
    vi.spyOn(checkpointer, 'putWrites').mockImplementation(async (...args) => (writes.push(Date.now()), putWrites(...args)));
    // The tool's answer arrives, then the process freezes for longer than the lease: no timer can fire meanwhile.
    const caller = new (class extends FakeToolCaller {
      override async call(...args: Parameters<FakeToolCaller['call']>): ReturnType<FakeToolCaller['call']> {
        const result = await super.call(...args);
        await sleep(50);
        const until = Date.now() + 700;
        while (Date.now() < until) {
          // frozen
        }
        wokeAt = Date.now();
        return result;
      }
    })();
    const { events, step } = harness({ rover }, checkpointer, { leases, caller });

    const { outcome } = await step(start(contextFor(), 'show the staff'));

    expect(outcome).toBe('stopped');
    expect(types(events)).toContain('TOOL_CALL_START');
    expect(wokeAt).toBeLessThan(Number.POSITIVE_INFINITY);
    expect(writes.filter((at) => at >= wokeAt)).toEqual([]);
    expect(types(events)).not.toContain('TOOL_CALL_RESULT');
    expect(types(events)).not.toContain('RUN_ERROR');
    expect(rover.callCount).toBe(1);
  });

  it('a step stopped by the transport (its time limit) still reports RUN_ERROR STEP_TIMED_OUT, and releases its lease', async () => {
    const rover = new SignalBoundModel();
    const { leases, executor, events } = harness({ rover });
    const transport = new AbortController();
    setTimeout(() => transport.abort(new Error('time limit')), 30);

    const outcome = await executor.execute(start(contextFor(), 'hello'), transport.signal);

    expect(outcome).toBe('error');
    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'STEP_TIMED_OUT' });
    expect(leases.requests.map(({ action }) => action)).toEqual(['claim', 'release']);
  });
});

/** An error as the provider SDKs throw one: its status, and text that must never reach a user. */
const providerError = (status: number) => Object.assign(new Error(`${status} {"error":"bad key sk-live-123 at https://models.internal/v1"}`), { status });

describe('model calls: usage before the reply is acted on, failures as their codes, untrusted replies', () => {
  it("every model call's tokens, Rover's and a specialist's, are reported with the step's dispatch token before its reply is acted on", async () => {
    const rover = fakeModel()
      .respond(toolCalls(call('task', { description: 'classes', subagent_type: 'class_teacher' }, 'tc-task')))
      .respond(new AIMessage('Done.'));
    const specialist = fakeModel().respond(toolCalls(call('list_my_classes', {}, 'tc-classes'))).respond(new AIMessage('Two classes.'));
    const usage = new FakeRunUsage();
    const caller = new FakeToolCaller();
    const callsWhenReported: number[] = [];
    usage.answer(...Array.from({ length: 4 }, () => () => {
      callsWhenReported.push(caller.calls.length);
      return { proceed: true as const, run: usage.totals };
    }));
    const { step } = harness({ rover, class_teacher: specialist }, new MemorySaver(), { usage, caller });

    const { outcome } = await step(start(contextFor(), 'list my classes'));

    expect(outcome).toBe('success');
    expect(usage.reports).toHaveLength(4);
    expect(usage.reports.every(({ dispatchToken, usage: tokens }) => dispatchToken === TEST_DISPATCH_TOKEN && tokens.inputTokens > 0)).toBe(true);
    // The specialist's tool call was made only after the report of the reply that asked for it was answered.
    expect(callsWhenReported).toEqual([0, 0, 1, 1]);
  });

  it.each(['step_token_budget_spent', 'token_budget_spent', 'cancelled'] as const)(
    'a usage report answered "stop" (%s) ends the step: no tool of that reply runs, nothing more is published, the lease is not released',
    async (reason) => {
      const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff'))).respond(new AIMessage('never'));
      const usage = new FakeRunUsage().answer({ proceed: false, reason });
      const { caller, events, leases, step } = harness({ rover }, new MemorySaver(), { usage });

      const { outcome } = await step(start(contextFor(), 'show the staff'));

      expect(outcome).toBe('stopped');
      expect(caller.calls).toEqual([]);
      expect(rover.callCount).toBe(1);
      expect(types(events)).not.toContain('TOOL_CALL_RESULT');
      expect(types(events)).not.toContain('RUN_FINISHED');
      expect(types(events)).not.toContain('RUN_ERROR');
      expect(leases.requests.map(({ action }) => action)).toEqual(['claim']);
    },
  );

  it('a usage report that gets no answer stops the step the same way (the server could not count it): fail closed', async () => {
    const rover = fakeModel().respond(toolCalls(call('list_staff', {}, 'tc-staff')));
    const usage = new FakeRunUsage().answer(new Error('no reply within 5000 ms'));
    const { caller, events, leases, step } = harness({ rover }, new MemorySaver(), { usage });

    const { outcome } = await step(start(contextFor(), 'show the staff'));

    expect(outcome).toBe('stopped');
    expect(caller.calls).toEqual([]);
    expect(types(events)).toEqual(['RUN_STARTED']);
    expect(leases.requests.map(({ action }) => action)).toEqual(['claim']);
  });

  it.each([
    [401, 'MODEL_REJECTED_CREDENTIALS'],
    [403, 'MODEL_REJECTED_CREDENTIALS'],
    [429, 'MODEL_RATE_LIMITED'],
    [500, 'MODEL_FAILED'],
    [503, 'MODEL_FAILED'],
  ] as const)('a model call failing with %i ends the step with RUN_ERROR %s and its sentence, never the provider text', async (status, code) => {
    const { step } = harness({ rover: fakeModel().alwaysThrow(providerError(status)) });

    const { outcome, events } = await step(start(contextFor(), 'hello'));

    expect(outcome).toBe('error');
    expect(events.at(-1)).toEqual(expect.objectContaining({ type: 'RUN_ERROR', code, message: ERROR_SENTENCES[code] }));
    expect(JSON.stringify(events)).not.toMatch(/sk-live|models\.internal/);
  });

  it("a specialist's model failing ends the step with its code too, not a tool result Rover reads on", async () => {
    const rover = fakeModel().respond(toolCalls(call('task', { description: 'classes', subagent_type: 'class_teacher' }, 'tc-task'))).respond(new AIMessage('never'));
    const { step } = harness({ rover, class_teacher: fakeModel().alwaysThrow(providerError(429)) });

    const { events } = await step(start(contextFor(), 'list my classes'));

    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_RATE_LIMITED' });
    expect(rover.callCount).toBe(1);
    expect(JSON.stringify(events)).not.toContain('sk-live');
  });

  it('arguments that are not JSON come back to the model as a tool result saying so; nothing is called', async () => {
    const seen: BaseMessage[][] = [];
    const malformed = new AIMessage({ content: '', tool_calls: [], invalid_tool_calls: [{ type: 'invalid_tool_call', id: 'tc-bad', name: 'create_department', args: '{"name": "Sci', error: 'Malformed args.' }] });
    const rover = fakeModel()
      .respond(malformed)
      .respond((messages: BaseMessage[]) => {
        seen.push(messages);
        return new AIMessage('Sorry.');
      });
    const { caller, events, step } = harness({ rover });

    const { outcome } = await step(start(contextFor(), 'create a department'));

    expect(outcome).toBe('success');
    expect(caller.calls).toEqual([]);
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({ toolCallId: 'tc-bad', content: malformedArgumentsMessage('create_department') });
    expect(seen[0]?.at(-1)).toMatchObject({ tool_call_id: 'tc-bad', content: malformedArgumentsMessage('create_department') });
  });

  it("arguments the tool's schema refuses come back as a tool result naming the problem, without LangChain's stack; nothing is called", async () => {
    const rover = fakeModel().respond(toolCalls(call('create_department', { name: 'Sciences', schoolId: 'another-school' }, 'tc-refused'))).respond(new AIMessage('Sorry.'));
    const { caller, events, step } = harness({ rover });

    await step(start(contextFor(), 'create a department'));

    expect(caller.calls).toEqual([]);
    const result = events.find((event) => event.type === 'TOOL_CALL_RESULT');
    const content = result?.type === 'TOOL_CALL_RESULT' ? result.content : '';
    expect(content).toMatch(/^The arguments of this "create_department" call do not match the tool's schema, so it was not run and nothing was sent: .*schoolId/);
    expect(content).not.toMatch(/ at .*\.(js|ts):\d+/);
  });

  it('a call to a tool the agent does not have comes back as a tool result naming the tools there are; nothing is called', async () => {
    const rover = fakeModel().respond(toolCalls(call('drop_all_tables', {}, 'tc-unknown'))).respond(new AIMessage('Sorry.'));
    const { caller, events, step } = harness({ rover });

    await step(start(contextFor(), 'drop everything'));

    expect(caller.calls).toEqual([]);
    expect(events.find((event) => event.type === 'TOOL_CALL_RESULT')).toMatchObject({ toolCallId: 'tc-unknown', content: expect.stringMatching(/drop_all_tables is not a valid tool, try one of \[.*list_staff/) });
  });

  it("a reply with no words to the user's message says the model declined; an Anthropic refusal keeps its own words", async () => {
    const silent = harness({ rover: fakeModel().respond(new AIMessage('')) });
    const { events } = await silent.step(start(contextFor(), 'do something you will not'));
    const text = events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').map((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? event.delta : '')).join('');
    expect(text).toBe(DECLINED_REPLY);

    const worded = harness({ rover: fakeModel().respond(new AIMessage({ content: 'I will not help with that.', response_metadata: { stop_reason: 'refusal' } })) });
    const refused = await worded.step(start(contextFor(), 'do something you will not'));
    expect(refused.events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').map((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? event.delta : '')).join('')).toBe('I will not help with that.');
  });
});
