import { createHash } from 'node:crypto';
import {
  AGENT_RUN_MODES,
  AGENT_TOOL_ROLES,
  EM_DASH,
  RPC_AGENT_TOOLS,
  agentRuntimeContextSchema,
  defineAgentTool,
  identityFromUserDetails,
  type AgentToolEvent,
  type AgentToolPayload,
  type AgentRunModeName,
  type AgentToolResult,
  type AgentToolRole,
} from '@naalya/agent-tools';
import { ToolInputParsingException } from '@langchain/core/tools';
import { Command, MemorySaver } from '@langchain/langgraph';
import { AIMessage, HumanMessage, ToolMessage, createAgent, fakeModel } from 'langchain';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { AgentToolCaller } from './agent-tool-caller.js';
import {
  buildAgentTools,
  buildClassTeacherTools,
  buildDosTools,
  buildRoleTools,
  buildSubjectTeacherTools,
  CONFIRMATION_DECLINED_ERROR,
  toRpcProxy,
  toolCallIdempotencyKey,
  withoutEmDash,
} from './build-agent-tools.js';
import { CONTEXT_MISSING_ERROR, resolveCallScope, resolveIdentity } from './tool-context.js';
import {
  OTHER_CAMPUS_ID,
  OTHER_SCHOOL_ID,
  PINNED_CAMPUS_ID,
  SCHOOL_ID,
  campusContext,
  platformAdminContext,
  schoolContext,
} from './tool-context.fixture.js';

type RecordedCall = { event: AgentToolEvent; payload: AgentToolPayload[AgentToolEvent] };

const PREVIEW_QUESTION = 'Delete the department "Sciences" (Main campus)? It has 2 members, headed by Jane Akello.';

// Calls and the previews a confirmable tool sends before them, kept apart: a preview runs nothing on the server.
class FakeToolCaller implements AgentToolCaller {
  readonly timeoutMs = 15_000;
  readonly calls: RecordedCall[] = [];
  readonly previews: RecordedCall[] = [];
  result: AgentToolResult = { data: [], scopeContext: 'You can see staff across the whole school.' };
  previewResult: AgentToolResult = { data: { question: PREVIEW_QUESTION }, scopeContext: 'Your access covers the whole school.' };

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    if (payload.meta.preview) {
      this.previews.push({ event, payload });
      return this.previewResult;
    }
    this.calls.push({ event, payload });
    return this.result;
  }
}

const definitionNamed = (name: string) => {
  const definition = RPC_AGENT_TOOLS.find((candidate) => candidate.name === name);
  if (!definition) throw new Error(`no tool ${name}`);
  return definition;
};

type InvokeOptions = { context?: unknown; toolCallId?: string; writer?: (chunk: unknown) => void };

// Invokes a proxy the way langchain's ToolNode does (agents/nodes/ToolNode.js runTool): the tool call
// as input, and a config carrying the graph's context, writer and the tool call id, which tool()
// hands to the function as its runtime. The createAgent suite below checks the same path end to end.
const invokeProxy = async (
  proxy: ReturnType<typeof toRpcProxy>,
  args: Record<string, unknown>,
  { context, toolCallId = 'call-1', writer }: InvokeOptions = {},
) => {
  // Given a tool call, tool() answers with a ToolMessage although its declared output type is the string.
  const output: unknown = await proxy.invoke(
    { id: toolCallId, name: proxy.name, args, type: 'tool_call' },
    { context, toolCallId, writer, configurable: { thread_id: 'thread-1' } },
  );
  if (!ToolMessage.isInstance(output)) throw new Error('expected a ToolMessage for a tool call');
  return JSON.parse(String(output.content)) as unknown;
};

describe('toRpcProxy', () => {
  let caller: FakeToolCaller;
  beforeEach(() => {
    caller = new FakeToolCaller();
  });

  it('sends the definition event (not the model-facing name) with identity from the runtime context', async () => {
    const context = schoolContext();
    await invokeProxy(toRpcProxy(definitionNamed('list_staff'), caller), {}, { context });

    expect(caller.calls).toHaveLength(1);
    expect(caller.calls[0].event).toBe('list.staff');
    expect(caller.calls[0].payload.identity).toEqual(identityFromUserDetails(context.userDetails));
    expect(caller.calls[0].payload.scope).toEqual({ mode: 'school' });
  });

  it('takes identity and call scope through resolveIdentity and resolveCallScope, resolved once per context', async () => {
    const context = campusContext();
    const proxy = toRpcProxy(definitionNamed('list_staff'), caller);
    await invokeProxy(proxy, {}, { context, toolCallId: 'call-1' });
    await invokeProxy(proxy, {}, { context, toolCallId: 'call-2' });

    // The very objects the helpers resolved for this context, not copies the proxy built beside them.
    for (const { payload } of caller.calls) {
      expect(payload.identity).toBe(resolveIdentity({ context }));
      expect(payload.scope).toBe(resolveCallScope({ context }));
    }
  });

  it('campus mode: the envelope campus wins over a model-supplied campusId', async () => {
    await invokeProxy(toRpcProxy(definitionNamed('list_staff'), caller), { campusId: OTHER_CAMPUS_ID }, {
      context: campusContext(),
    });

    expect(caller.calls[0].payload.scope).toEqual({ mode: 'campus', campusId: PINNED_CAMPUS_ID });
  });

  it('school mode: the target school comes from the dispatch, never from the model', async () => {
    await invokeProxy(toRpcProxy(definitionNamed('create_department'), caller), { name: 'Sciences' }, {
      context: platformAdminContext(),
    });

    expect(caller.calls[0].payload.scope).toEqual({ mode: 'school', targetSchoolId: SCHOOL_ID });
    expect(caller.calls[0].payload.identity).toMatchObject({ sub: 'user-root', type: 'platform_admin', schoolId: null });
  });

  it.each([
    ['schoolId', OTHER_SCHOOL_ID],
    ['targetSchoolId', OTHER_SCHOOL_ID],
    ['sub', 'user-someone-else'],
    ['userId', 'user-someone-else'],
    ['type', 'platform_admin'],
    ['identity', { sub: 'user-someone-else', type: 'platform_admin', schoolId: null, campusId: null }],
    ['scope', { mode: 'school' }],
    ['meta', { callId: 'x'.repeat(64), deadline: 1 }],
  ])('the model cannot pass %s: the strict schema refuses it and nothing is sent', async (key, value) => {
    const proxy = toRpcProxy(definitionNamed('create_department'), caller);

    await expect(invokeProxy(proxy, { name: 'Sciences', [key]: value }, { context: schoolContext() })).rejects.toBeInstanceOf(
      ToolInputParsingException,
    );
    expect(caller.calls).toEqual([]);
  });

  it('parses args with the definition schema before sending (defaults applied, text trimmed)', async () => {
    await invokeProxy(
      toRpcProxy(definitionNamed('add_department_member'), caller),
      { departmentId: SCHOOL_ID, staffId: OTHER_SCHOOL_ID },
      { context: schoolContext() },
    );
    await invokeProxy(toRpcProxy(definitionNamed('create_department'), caller), { name: '  Sciences  ' }, {
      context: schoolContext(),
    });

    expect(caller.calls[0].payload.args).toEqual({ departmentId: SCHOOL_ID, staffId: OTHER_SCHOOL_ID, asHead: false });
    expect(caller.calls[1].payload.args).toEqual({ name: 'Sciences' });
  });

  describe('fail closed: no trusted context means CONTEXT_MISSING_ERROR and the caller is never called', () => {
    const valid = schoolContext();
    it.each<[string, unknown]>([
      ['no context at all', undefined],
      ['a malformed context (userDetails missing its id)', { ...valid, userDetails: { ...valid.userDetails, id: undefined } }],
      ['a context with an extra key', { ...valid, schoolId: OTHER_SCHOOL_ID }],
      ['a context naming an unknown user type', { ...valid, userDetails: { ...valid.userDetails, userType: 'root' } }],
    ])('%s', async (_, context) => {
      const result = await invokeProxy(toRpcProxy(definitionNamed('list_staff'), caller), {}, { context });

      expect(result).toEqual({ error: CONTEXT_MISSING_ERROR, code: 'CONTEXT_MISSING' });
      expect(caller.calls).toEqual([]);
    });

    it('a missing tool call id (no stable idempotency key)', async () => {
      const proxy = toRpcProxy(definitionNamed('list_staff'), caller);
      const message = await proxy.invoke({}, { context: valid });

      expect(JSON.parse(String(message))).toEqual({ error: CONTEXT_MISSING_ERROR, code: 'CONTEXT_MISSING' });
      expect(caller.calls).toEqual([]);
    });
  });

  describe('meta', () => {
    it('callId is the sha256 of threadId:toolCallId, stable when a resume replays the same tool call', async () => {
      const proxy = toRpcProxy(definitionNamed('create_department'), caller);
      await invokeProxy(proxy, { name: 'Sciences' }, { context: schoolContext(), toolCallId: 'call-7' });
      await invokeProxy(proxy, { name: 'Sciences' }, { context: schoolContext(), toolCallId: 'call-7' });

      const expected = createHash('sha256').update('thread-1:call-7').digest('hex');
      expect(caller.calls.map((call) => call.payload.meta.callId)).toEqual([expected, expected]);
      expect(expected).toMatch(/^[0-9a-f]{64}$/);
    });

    it('callId differs for another tool call id or another thread', async () => {
      const proxy = toRpcProxy(definitionNamed('create_department'), caller);
      const otherThread = { ...schoolContext(), run: { runId: 'run-2', threadId: 'thread-2' } };
      await invokeProxy(proxy, { name: 'Sciences' }, { context: schoolContext(), toolCallId: 'call-7' });
      await invokeProxy(proxy, { name: 'Sciences' }, { context: schoolContext(), toolCallId: 'call-8' });
      await invokeProxy(proxy, { name: 'Sciences' }, { context: otherThread, toolCallId: 'call-7' });

      expect(new Set(caller.calls.map((call) => call.payload.meta.callId)).size).toBe(3);
    });

    it('callId does not collide when the separator moves between threadId and toolCallId', () => {
      expect(toolCallIdempotencyKey('thread-1', 'call-7')).not.toBe(toolCallIdempotencyKey('thread-1:call', '7'));
    });

    it('deadline is now plus the caller timeout', async () => {
      const before = Date.now();
      await invokeProxy(toRpcProxy(definitionNamed('list_staff'), caller), {}, { context: schoolContext() });
      const after = Date.now();

      const { deadline } = caller.calls[0].payload.meta;
      expect(deadline).toBeGreaterThanOrEqual(before + caller.timeoutMs);
      expect(deadline).toBeLessThanOrEqual(after + caller.timeoutMs);
    });
  });

  describe('result and streamOnSuccess', () => {
    it('returns the caller result as JSON, unchanged', async () => {
      caller.result = { data: [{ id: 'staff-1', name: 'Ada' }], scopeContext: 'Your access covers the Kisasi campus only.' };
      const result = await invokeProxy(toRpcProxy(definitionNamed('list_staff'), caller), {}, { context: schoolContext() });

      expect(result).toEqual(caller.result);
    });

    it('on success emits the streamOnSuccess event with the auditId added', async () => {
      caller.result = { data: { id: 'dept-1' }, scopeContext: 'You can act across the whole school.', auditId: 'audit-1' };
      const writer = vi.fn();
      await invokeProxy(toRpcProxy(definitionNamed('create_department'), caller), { name: 'Sciences' }, {
        context: schoolContext(),
        writer,
      });

      expect(writer).toHaveBeenCalledTimes(1);
      expect(writer).toHaveBeenCalledWith({
        name: 'department.created',
        label: 'Department "Sciences" created',
        resourceType: 'department',
        auditId: 'audit-1',
      });
    });

    it('on success without an auditId emits the event without an auditId key', async () => {
      caller.result = { data: { id: 'dept-1' }, scopeContext: 'You can act across the whole school.' };
      const writer = vi.fn();
      await invokeProxy(toRpcProxy(definitionNamed('create_department'), caller), { name: 'Sciences' }, {
        context: schoolContext(),
        writer,
      });

      expect(writer.mock.calls[0][0]).not.toHaveProperty('auditId');
    });

    it('never emits streamOnSuccess on an { error } result, so a failed write is not celebrated', async () => {
      caller.result = { error: 'Forbidden resource', code: 'PERMISSION_DENIED' };
      const writer = vi.fn();
      const result = await invokeProxy(toRpcProxy(definitionNamed('create_department'), caller), { name: 'Sciences' }, {
        context: schoolContext(),
        writer,
      });

      expect(writer).not.toHaveBeenCalled();
      expect(result).toEqual({ error: 'Forbidden resource', code: 'PERMISSION_DENIED' });
    });

    it('a read without streamOnSuccess emits nothing', async () => {
      const writer = vi.fn();
      await invokeProxy(toRpcProxy(definitionNamed('list_staff'), caller), {}, { context: schoolContext(), writer });

      expect(writer).not.toHaveBeenCalled();
    });
  });

  it('refuses a definition the registry does not hold, since no server handler would answer it', () => {
    const unregistered = defineAgentTool({
      name: 'list_probes',
      event: 'list.probes',
      description: 'Probe.',
      schema: z.strictObject({}),
      result: z.unknown(),
    });

    expect(() => toRpcProxy(unregistered, new FakeToolCaller())).toThrow(/does not register/);
  });
});

describe('withoutEmDash', () => {
  it('replaces a spaced em dash and a bare one with a comma', () => {
    expect(withoutEmDash(`Create a department ${EM_DASH} on a campus`)).toBe('Create a department, on a campus');
    expect(withoutEmDash(`one${EM_DASH}two`)).toBe('one, two');
  });
});

describe('descriptions', () => {
  it.each(AGENT_RUN_MODES)('no tool on any belt in %s mode has an em dash in its description', (mode) => {
    const belts = [buildAgentTools(new FakeToolCaller(), mode), ...AGENT_TOOL_ROLES.map((role) => buildRoleTools(role, new FakeToolCaller(), mode))];
    for (const belt of belts) for (const beltTool of belt) expect(beltTool.description).not.toContain(EM_DASH);
  });
});

describe('belts', () => {
  const caller = new FakeToolCaller();
  const names = (belt: Array<{ name: string }>) => belt.map((beltTool) => beltTool.name);
  // Written out, as __snapshots__/agent-belts.md on the server reads them: a tool that moves belt fails here.
  const ROVER_SCHOOL_MODE = [
    'list_staff',
    'list_departments',
    'create_department',
    'delete_department',
    'add_department_member',
    'get_school_branding',
    'update_school_branding',
    'list_campuses',
    'list_subjects',
    'get_tool_call_outcome',
    'clock',
    'get_agent_map',
    'ask_user',
  ];
  // Every specialist belt is the same in both modes: no role tool is limited to one.
  const ROLE_BELTS: Record<AgentToolRole, string[]> = {
    class_teacher: ['list_subjects', 'list_my_classes', 'list_class_students', 'record_attendance', 'get_tool_call_outcome', 'ask_user'],
    subject_teacher: [
      'list_subjects',
      'list_my_teaching_assignments',
      'get_gradebook',
      'record_marks',
      'create_lesson_plan',
      'list_lesson_plans',
      'get_tool_call_outcome',
      'ask_user',
    ],
    dos: [
      'list_subjects',
      'list_class_students',
      'assign_subject_teacher',
      'get_results_summary',
      'list_pending_lesson_plans',
      'approve_lesson_plan',
      'get_tool_call_outcome',
      'ask_user',
    ],
  };

  const ROVER_BELTS: Record<AgentRunModeName, string[]> = {
    school: ROVER_SCHOOL_MODE,
    // list_campuses is the one tool offered in school mode only.
    campus: ROVER_SCHOOL_MODE.filter((name) => name !== 'list_campuses'),
  };

  it.each(AGENT_RUN_MODES)("Rover's belt in %s mode: the mode's tools without roles (shared ones kept), plus the local tools", (mode) => {
    expect(names(buildAgentTools(caller, mode))).toEqual(ROVER_BELTS[mode]);
  });

  it("Rover's belt defaults to school mode and carries the clock", () => {
    expect(names(buildAgentTools(caller))).toEqual(names(buildAgentTools(caller, 'school')));
    expect(names(buildAgentTools(caller))).toContain('clock');
  });

  it.each(AGENT_TOOL_ROLES.flatMap((role) => AGENT_RUN_MODES.map((mode) => [role, mode] as const)))(
    'the %s belt in %s mode: its own tools, the shared ones and ask_user',
    (role, mode) => {
      expect(names(buildRoleTools(role, caller, mode))).toEqual(ROLE_BELTS[role]);
    },
  );

  it('the per-role wrappers are buildRoleTools for their role', () => {
    for (const mode of AGENT_RUN_MODES) {
      expect(names(buildClassTeacherTools(caller, mode))).toEqual(names(buildRoleTools('class_teacher', caller, mode)));
      expect(names(buildSubjectTeacherTools(caller, mode))).toEqual(names(buildRoleTools('subject_teacher', caller, mode)));
      expect(names(buildDosTools(caller, mode))).toEqual(names(buildRoleTools('dos', caller, mode)));
    }
  });
});

describe('inside a real createAgent run', () => {
  const THREAD_ID = 'thread-real';
  const contextFor = () => ({ ...campusContext(), run: { runId: 'run-real', threadId: THREAD_ID } });

  const roverWith = (caller: AgentToolCaller, toolCall: { name: string; args: Record<string, unknown>; id: string }) =>
    createAgent({
      model: fakeModel().respondWithTools([toolCall]).respond(new AIMessage('Done.')),
      tools: buildAgentTools(caller, 'campus'),
      contextSchema: agentRuntimeContextSchema,
      checkpointer: new MemorySaver(),
    });

  it('the graph hands the proxy its context, tool call id and writer: identity, campus pin, callId and the streamed event', async () => {
    const caller = new FakeToolCaller();
    caller.result = { data: { id: 'dept-1' }, scopeContext: 'Your access covers the Kisasi campus only.', auditId: 'audit-9' };
    const rover = roverWith(caller, { name: 'create_department', args: { name: 'Sciences', campusId: OTHER_CAMPUS_ID }, id: 'tc-42' });

    const custom: unknown[] = [];
    const stream = await rover.stream(
      { messages: [new HumanMessage('Create a department called Sciences')] },
      { configurable: { thread_id: THREAD_ID }, context: contextFor(), streamMode: ['custom', 'updates'] },
    );
    for await (const [mode, chunk] of stream) if (mode === 'custom') custom.push(chunk);

    expect(caller.calls).toHaveLength(1);
    const { payload } = caller.calls[0];
    expect(payload.identity).toEqual(identityFromUserDetails(contextFor().userDetails));
    expect(payload.scope).toEqual({ mode: 'campus', campusId: PINNED_CAMPUS_ID });
    expect(payload.meta.callId).toBe(createHash('sha256').update(`${THREAD_ID}:tc-42`).digest('hex'));
    expect(custom).toEqual([
      { name: 'department.created', label: 'Department "Sciences" created', resourceType: 'department', auditId: 'audit-9' },
    ]);
  });

  it('a model-supplied schoolId in a real run is refused before anything is sent', async () => {
    const caller = new FakeToolCaller();
    const rover = roverWith(caller, { name: 'create_department', args: { name: 'Sciences', schoolId: OTHER_SCHOOL_ID }, id: 'tc-43' });

    const result = await rover.invoke(
      { messages: [new HumanMessage('Create a department called Sciences in the other school')] },
      { configurable: { thread_id: THREAD_ID }, context: contextFor() },
    );

    expect(caller.calls).toEqual([]);
    const toolMessage = result.messages.find((message) => message.type === 'tool');
    expect(String(toolMessage?.content)).toMatch(/did not match expected schema/);
  });
});

describe('a tool that needs confirmation', () => {
  const THREAD_ID = 'thread-confirm';
  const DEPARTMENT_ID = '5f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f';
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const config = { configurable: { thread_id: THREAD_ID }, context: { ...schoolContext(), run: { runId: 'run-confirm', threadId: THREAD_ID } } };

  type ModelCall = { name: string; args: Record<string, unknown> };
  const agentWith = (caller: AgentToolCaller, tools = buildAgentTools(caller, 'school'), call: ModelCall = { name: 'delete_department', args: { departmentId: DEPARTMENT_ID } }) =>
    createAgent({
      model: fakeModel().respondWithTools([{ ...call, id: 'tc-confirm' }]).respond(new AIMessage('Done.')),
      tools,
      contextSchema: agentRuntimeContextSchema,
      checkpointer: new MemorySaver(),
    });

  const pendingValues = async (agent: ReturnType<typeof agentWith>) =>
    (await agent.graph.getState(config)).tasks.flatMap((task) => task.interrupts ?? []).map((pending) => pending.value);

  const toolResult = (messages: { type: string; content: unknown }[]) => JSON.parse(String(messages.find((message) => message.type === 'tool')?.content)) as unknown;

  it("pauses the run with the server's question from the records, bound to the call id and argument hash, before the call is sent", async () => {
    const caller = new FakeToolCaller();
    const agent = agentWith(caller);
    await agent.invoke({ messages: [new HumanMessage('Delete that department')] }, config);

    expect(caller.calls).toEqual([]);
    // One preview of exactly the model's call: same event, arguments and call id, marked as a preview.
    expect(caller.previews).toHaveLength(1);
    expect(caller.previews[0].event).toBe('delete.department');
    expect(caller.previews[0].payload.args).toEqual({ departmentId: DEPARTMENT_ID });
    expect(caller.previews[0].payload.meta).toMatchObject({ callId: sha256(`${THREAD_ID}:tc-confirm`), preview: true });
    expect(await pendingValues(agent)).toEqual([
      {
        question: PREVIEW_QUESTION,
        askedBy: 'rover',
        toolCallId: 'tc-confirm',
        argsHash: sha256(`{"departmentId":"${DEPARTMENT_ID}"}`),
        confirmation: { event: 'delete.department', callId: sha256(`${THREAD_ID}:tc-confirm`), args: { departmentId: DEPARTMENT_ID } },
      },
    ]);
  });

  it('after yes it sends exactly the approved arguments, once, with the call id the confirmation named', async () => {
    const caller = new FakeToolCaller();
    caller.result = { data: { deleted: true }, scopeContext: 'Your access covers the whole school.' };
    const agent = agentWith(caller);
    await agent.invoke({ messages: [new HumanMessage('Delete that department')] }, config);
    const result = await agent.invoke(new Command({ resume: 'yes' }), config);

    expect(caller.calls).toHaveLength(1);
    expect(caller.calls[0].event).toBe('delete.department');
    expect(caller.calls[0].payload.args).toEqual({ departmentId: DEPARTMENT_ID });
    expect(caller.calls[0].payload.meta.callId).toBe(sha256(`${THREAD_ID}:tc-confirm`));
    expect(toolResult(result.messages)).toEqual(caller.result);
  });

  it('a call the server refuses at preview (a resource the caller may not see) is refused without a question', async () => {
    const caller = new FakeToolCaller();
    caller.previewResult = { error: 'Department not found.', code: 'NOT_FOUND' };
    const agent = agentWith(caller);
    const result = await agent.invoke({ messages: [new HumanMessage('Delete that department')] }, config);

    expect(await pendingValues(agent)).toEqual([]);
    expect(caller.calls).toEqual([]);
    expect(toolResult(result.messages)).toEqual(caller.previewResult);
  });

  it('a preview without a question is a failure, never an empty question', async () => {
    const caller = new FakeToolCaller();
    caller.previewResult = { data: {}, scopeContext: 'Your access covers the whole school.' };
    const agent = agentWith(caller);
    const result = await agent.invoke({ messages: [new HumanMessage('Delete that department')] }, config);

    expect(await pendingValues(agent)).toEqual([]);
    expect(caller.calls).toEqual([]);
    expect(toolResult(result.messages)).toMatchObject({ code: 'TOOL_FAILED' });
  });

  it('after no it sends nothing and tells the model the user did not approve', async () => {
    const caller = new FakeToolCaller();
    const agent = agentWith(caller);
    await agent.invoke({ messages: [new HumanMessage('Delete that department')] }, config);
    const result = await agent.invoke(new Command({ resume: 'no' }), config);

    expect(caller.calls).toEqual([]);
    expect(toolResult(result.messages)).toEqual({ error: CONFIRMATION_DECLINED_ERROR, code: 'CONFIRMATION_DECLINED' });
  });

  it("a specialist's confirmation is attributed to the specialist", async () => {
    const caller = new FakeToolCaller();
    const agent = agentWith(caller, buildRoleTools('dos', caller, 'school'), {
      name: 'approve_lesson_plan',
      args: { lessonPlanId: DEPARTMENT_ID },
    });
    await agent.invoke({ messages: [new HumanMessage('Approve it')] }, config);

    expect(caller.calls).toEqual([]);
    expect(await pendingValues(agent)).toEqual([expect.objectContaining({ askedBy: 'dos', confirmation: expect.objectContaining({ event: 'approve.lesson-plan' }) })]);
  });

  describe('approve with edits', () => {
    const PLAN_ID = '6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    const approve = { name: 'approve_lesson_plan', args: { lessonPlanId: PLAN_ID, comment: 'Good' } };
    const dosAgent = (caller: FakeToolCaller) => agentWith(caller, buildRoleTools('dos', caller, 'school'), approve);
    const start = async (caller: FakeToolCaller) => {
      const agent = dosAgent(caller);
      await agent.invoke({ messages: [new HumanMessage('Approve it')] }, config);
      return agent;
    };

    it('a question offers the editable arguments with their values; an edit is previewed and asked again, naming what changed', async () => {
      const caller = new FakeToolCaller();
      const agent = await start(caller);
      expect((await pendingValues(agent))[0]).toMatchObject({ confirmation: { args: approve.args, editable: { comment: 'Good' } } });

      await agent.invoke(new Command({ resume: { editedArgs: { lessonPlanId: PLAN_ID, comment: 'Add homework' } } }), config);

      expect(caller.calls).toEqual([]);
      // The resume replays the proxy from its first line (the first preview again, a read), then previews the edit.
      expect(caller.previews.map((preview) => preview.payload.args)).toEqual([approve.args, approve.args, { lessonPlanId: PLAN_ID, comment: 'Add homework' }]);
      expect(await pendingValues(agent)).toEqual([
        expect.objectContaining({
          argsHash: sha256(`{"comment":"Add homework","lessonPlanId":"${PLAN_ID}"}`),
          confirmation: expect.objectContaining({
            editable: { comment: 'Add homework' },
            edited: [{ field: 'comment', from: 'Good', to: 'Add homework' }],
          }),
        }),
      ]);
    });

    it('after yes to the edited question only the edited call runs, once, and the model is told what the user changed', async () => {
      const caller = new FakeToolCaller();
      caller.result = { data: { id: PLAN_ID }, scopeContext: 'Your access covers the whole school.' };
      const agent = await start(caller);
      await agent.invoke(new Command({ resume: { editedArgs: { lessonPlanId: PLAN_ID, comment: 'Add homework' } } }), config);
      const result = await agent.invoke(new Command({ resume: 'yes' }), config);

      expect(caller.calls.map((call) => call.payload.args)).toEqual([{ lessonPlanId: PLAN_ID, comment: 'Add homework' }]);
      expect(toolResult(result.messages)).toMatchObject({
        data: { id: PLAN_ID },
        userEdited: { fields: ['comment'], ran: { comment: 'Add homework' }, note: expect.stringMatching(/user changed comment/) },
      });
    });

    it('an edit the server refuses at preview (out of the caller rights) is refused without a second question, and nothing runs', async () => {
      const caller = new FakeToolCaller();
      const agent = await start(caller);
      caller.previewResult = { error: 'Lesson plan not found.', code: 'NOT_FOUND' };
      const result = await agent.invoke(new Command({ resume: { editedArgs: { lessonPlanId: PLAN_ID, comment: 'Other' } } }), config);

      expect(await pendingValues(agent)).toEqual([]);
      expect(caller.calls).toEqual([]);
      expect(toolResult(result.messages)).toEqual(caller.previewResult);
    });

    it("an edit the tool's own schema refuses runs nothing and asks nothing", async () => {
      const caller = new FakeToolCaller();
      const agent = await start(caller);
      const result = await agent.invoke(new Command({ resume: { editedArgs: { lessonPlanId: 'not-an-id' } } }), config);

      expect(await pendingValues(agent)).toEqual([]);
      expect(caller.calls).toEqual([]);
      expect(caller.previews.map((preview) => preview.payload.args)).toEqual([approve.args, approve.args]);
      expect(toolResult(result.messages)).toMatchObject({ code: 'TOOL_FAILED' });
    });
  });

  it('a tool without confirm never pauses', () => {
    expect(RPC_AGENT_TOOLS.filter((definition) => !definition.confirm).map((definition) => definition.name)).toContain('create_department');
  });
});
