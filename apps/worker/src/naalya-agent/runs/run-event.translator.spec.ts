import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { askUserArgsHash } from '../core/tools/local/ask-user.tool.js';
import { RunEventTranslator, SNAPSHOT_BUDGET_BYTES, snapshotMessages, toAgentInterrupts, type RunEventDraft } from './run-event.translator.js';

const translator = () => new RunEventTranslator((toolCallId) => (toolCallId === 'tc-rpc' ? 12.5 : undefined));

// The chunk shapes LangGraph 1.7 streams with subgraphs: [namespace, mode, data]. A specialist runs inside the tools
// task of Rover's `task` call, so its namespace is ['tools:<that task id>']; its model calls carry lc_agent_name.
const SUB_NS = ['tools:task-7'];
const update = (node: string, messages: unknown[], ns: string[] = []) => [ns, 'updates', { [node]: { messages } }];
const token = (chunk: AIMessageChunk, agent = 'rover', ns: string[] = []) => [ns, 'messages', [chunk, { lc_agent_name: agent, langgraph_node: 'model_request' }]];
const text = (id: string, content: string) => new AIMessageChunk({ id, content });
const args = (id: string, index: number, piece: string, first?: { id: string; name: string }) =>
  new AIMessageChunk({ id, content: '', tool_call_chunks: [{ type: 'tool_call_chunk', index, args: piece, ...(first ?? {}) }] });
const taskStarts = (taskId: string, callId: string, role: string) => [
  [],
  'tasks',
  { id: taskId, name: 'tools', input: { messages: [], lg_tool_call: { id: callId, name: 'task', args: { description: 'x', subagent_type: role } } }, triggers: [] },
];
const run = (subject: RunEventTranslator, chunks: unknown[]): RunEventDraft[] => chunks.flatMap((chunk) => subject.translate(chunk));
const types = (events: RunEventDraft[]) => events.map((event) => event.type);
const deltasOf = (events: RunEventDraft[], type: 'TEXT_MESSAGE_CONTENT' | 'TOOL_CALL_ARGS', key?: string) =>
  events
    .filter((event) => event.type === type && (key === undefined || ('toolCallId' in event ? event.toolCallId : event.messageId) === key))
    .map((event) => ('delta' in event ? event.delta : ''));

describe('RunEventTranslator: streamed tokens', () => {
  it('sends each text delta as it comes, after a start naming the speaker, and ends the message when it is complete', () => {
    const subject = translator();
    expect(run(subject, [token(text('m1', '[scripted'))])).toEqual([
      { type: 'TEXT_MESSAGE_START', messageId: expect.any(String), role: 'assistant', name: 'rover' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: expect.any(String), delta: '[scripted' },
    ]);
    expect(types(run(subject, [token(text('m1', ' model]')), token(text('m1', ' Hello.'))]))).toEqual(['TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_CONTENT']);
    const final = run(subject, [update('model_request', [new AIMessageChunk({ id: 'm1', content: '[scripted model] Hello.', name: 'rover' })])]);
    expect(types(final)).toEqual(['TEXT_MESSAGE_END']);
  });

  it("streams a tool call's arguments as deltas that concatenate to its JSON arguments exactly, and ends it once they are complete", () => {
    const subject = translator();
    const json = JSON.stringify({ name: 'Sciences', headId: 'u-1' });
    const pieces = [json.slice(0, 5), json.slice(5, 17), json.slice(17)];
    const events = run(subject, [
      token(args('m2', 0, pieces[0], { id: 'tc-a', name: 'create_department' })),
      token(args('m2', 0, pieces[1])),
      token(args('m2', 0, pieces[2])),
    ]);
    expect(events[0]).toEqual({ type: 'TOOL_CALL_START', toolCallId: 'tc-a', toolCallName: 'create_department', metadata: { event: 'create.department' } });
    expect(deltasOf(events, 'TOOL_CALL_ARGS', 'tc-a').join('')).toBe(json);
    expect(types(events)).not.toContain('TOOL_CALL_END');
    const final = new AIMessageChunk({ id: 'm2', content: '', tool_calls: [{ id: 'tc-a', name: 'create_department', args: JSON.parse(json), type: 'tool_call' }] });
    expect(run(subject, [update('model_request', [final])])).toEqual([{ type: 'TOOL_CALL_END', toolCallId: 'tc-a' }]);
  });

  it('ends a call as soon as the next one starts streaming, and names the text it follows as the parent message', () => {
    const subject = translator();
    const events = run(subject, [
      token(text('m3', 'Checking.')),
      token(args('m3', 0, '{}', { id: 'tc-1', name: 'list_staff' })),
      token(args('m3', 1, '{"x"', { id: 'tc-2', name: 'clock' })),
      token(args('m3', 1, ':1}')),
    ]);
    const messageId = events[0].type === 'TEXT_MESSAGE_START' ? events[0].messageId : '';
    expect(types(events)).toEqual([
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_ARGS',
    ]);
    expect(events[2]).toMatchObject({ toolCallId: 'tc-1', parentMessageId: messageId, metadata: { event: 'list.staff' } });
    expect(events[4]).toEqual({ type: 'TOOL_CALL_END', toolCallId: 'tc-1' });
    // A local tool has no RabbitMQ event.
    expect(events[5]).not.toHaveProperty('metadata');
  });

  it('holds back argument fragments until the call has an id and a name, and sends them in order then', () => {
    const subject = translator();
    const early = run(subject, [token(args('m4', 0, '{"a":')), token(args('m4', 0, '1}', { id: 'tc-late', name: 'clock' }))]);
    expect(types(early)).toEqual(['TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_ARGS']);
    expect(deltasOf(early, 'TOOL_CALL_ARGS').join('')).toBe('{"a":1}');
  });

  it('sends nothing twice: the update carrying a streamed message only closes it, and a repeated update sends nothing', () => {
    const subject = translator();
    const streamed = run(subject, [token(text('m5', 'Hi')), token(args('m5', 0, '{}', { id: 'tc-5', name: 'list_staff' }))]);
    const final = new AIMessageChunk({ id: 'm5', content: 'Hi', tool_calls: [{ id: 'tc-5', name: 'list_staff', args: {}, type: 'tool_call' }] });
    const closing = run(subject, [update('model_request', [final])]);
    expect(types(closing)).toEqual(['TEXT_MESSAGE_END', 'TOOL_CALL_END']);
    expect(run(subject, [update('model_request', [final])])).toEqual([]);
    // A chunk of a message already closed (LangGraph re-emitting a node's output) is dropped too.
    expect(run(subject, [token(text('m5', 'Hi'))])).toEqual([]);
    const all = [...streamed, ...closing];
    expect(all.filter((event) => event.type === 'TEXT_MESSAGE_START')).toHaveLength(1);
    expect(all.filter((event) => event.type === 'TOOL_CALL_START')).toHaveLength(1);
  });

  it('sends a message that was never streamed whole from its update: text, then each call with its arguments in one delta', () => {
    const subject = translator();
    const whole = new AIMessage({ id: 'w1', content: 'Done.', tool_calls: [{ id: 'tc-rpc', name: 'list_staff', args: { campusId: 'c1' }, type: 'tool_call' }] });
    const events = run(subject, [token(new AIMessage({ id: 'w1', content: 'Done.' }) as unknown as AIMessageChunk), update('model_request', [whole])]);
    expect(types(events)).toEqual(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END', 'TOOL_CALL_START', 'TOOL_CALL_ARGS', 'TOOL_CALL_END']);
    expect(events[1]).toMatchObject({ delta: 'Done.' });
    expect(events[4]).toMatchObject({ toolCallId: 'tc-rpc', delta: '{"campusId":"c1"}' });
    expect(events[3]).toMatchObject({ parentMessageId: (events[0] as { messageId: string }).messageId });
  });

  it('sends the words of a streamed reply whose chunks carried none (a refusal the provider package dropped) whole from its update', () => {
    const events = run(translator(), [token(text('m-refusal', '')), token(text('m-refusal', '')), update('model_request', [new AIMessage({ id: 'm-refusal', content: 'The model declined.' })])]);
    expect(types(events)).toEqual(['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END']);
    expect(deltasOf(events, 'TEXT_MESSAGE_CONTENT')).toEqual(['The model declined.']);
  });

  it('reports a tool result once, as a tool message with the hop time of RPC calls only', () => {
    const subject = translator();
    const result = new ToolMessage({ id: 'tm-1', tool_call_id: 'tc-rpc', content: '{"data":[],"scopeContext":"x"}' });
    expect(run(subject, [update('tools', [result])])).toEqual([
      { type: 'TOOL_CALL_RESULT', messageId: 'tm-1', toolCallId: 'tc-rpc', role: 'tool', content: '{"data":[],"scopeContext":"x"}', metadata: { hopMs: 12.5 } },
    ]);
    expect(run(subject, [update('tools', [result])])).toEqual([]);
    expect(run(subject, [update('tools', [new ToolMessage({ id: 'tm-2', tool_call_id: 'tc-local', content: 'Wednesday' })])])[0]).not.toHaveProperty('metadata');
  });
});

describe('RunEventTranslator: specialists as subagents', () => {
  it("opens a subagent named by its role at its first event, attributes all it produces, and finishes it before the task call's result", () => {
    const subject = translator();
    const events = run(subject, [
      taskStarts('task-7', 'tc-task', 'dos'),
      token(args('m6', 0, '{}', { id: 'tc-dos', name: 'list_pending_lesson_plans' }), 'dos', SUB_NS),
      update('model_request', [new AIMessageChunk({ id: 'm6', content: '', name: 'dos', tool_calls: [{ id: 'tc-dos', name: 'list_pending_lesson_plans', args: {}, type: 'tool_call' }] })], SUB_NS),
      [SUB_NS, 'custom', { name: 'lesson-plan.listed', label: 'x' }],
      update('tools', [new ToolMessage({ id: 'tm-6', tool_call_id: 'tc-dos', content: '{"data":[]}' })], SUB_NS),
      token(text('m7', 'None waiting.'), 'dos', SUB_NS),
      update('model_request', [new AIMessageChunk({ id: 'm7', content: 'None waiting.', name: 'dos' })], SUB_NS),
      update('tools', [new ToolMessage({ id: 'tm-7', tool_call_id: 'tc-task', content: 'None waiting.' })]),
    ]);
    const started = events[0];
    expect(started).toEqual({ type: 'SUBAGENT_STARTED', subagentRunId: expect.any(String), name: 'dos', parentToolCallId: 'tc-task' });
    const subagentRunId = started.type === 'SUBAGENT_STARTED' ? started.subagentRunId : '';
    const finishedAt = events.findIndex((event) => event.type === 'SUBAGENT_FINISHED');
    expect(events[finishedAt]).toEqual({ type: 'SUBAGENT_FINISHED', subagentRunId, outcome: { type: 'success' } });
    expect(events.slice(1, finishedAt).every((event) => 'subagentRunId' in event && event.subagentRunId === subagentRunId)).toBe(true);
    expect(events.find((event) => event.type === 'TEXT_MESSAGE_START')).toMatchObject({ name: 'dos', subagentRunId });
    // Rover's own task result is Rover's, after the specialist finished.
    expect(events[finishedAt + 1]).toMatchObject({ type: 'TOOL_CALL_RESULT', toolCallId: 'tc-task' });
    expect(events[finishedAt + 1]).not.toHaveProperty('subagentRunId');
    expect(events.filter((event) => event.type === 'SUBAGENT_STARTED')).toHaveLength(1);
  });

  it('finishes a specialist paused by a question as suspended on the interrupts pending in its task, and names it for them', () => {
    const subject = translator();
    run(subject, [taskStarts('task-7', 'tc-task', 'class_teacher'), token(args('m8', 0, '{}', { id: 'tc-ask', name: 'ask_user' }), 'class_teacher', SUB_NS)]);
    const ending = subject.end([{ id: 'int-1', taskId: 'task-7' }, { id: 'int-2', taskId: 'other-task' }]);
    const subagentRunId = subject.subagentRunIdOfTask('task-7');
    expect(subagentRunId).toEqual(expect.any(String));
    expect(ending).toEqual([
      { type: 'TOOL_CALL_END', toolCallId: 'tc-ask', subagentRunId },
      { type: 'SUBAGENT_FINISHED', subagentRunId, outcome: { type: 'suspended', interruptIds: ['int-1'] } },
    ]);
    expect(subject.subagentRunIdOfTask('other-task')).toBeUndefined();
  });

  it("does not open a subagent for a task call whose specialist never ran (an ineligible role), nor for Rover's own events", () => {
    const subject = translator();
    const events = run(subject, [
      taskStarts('task-9', 'tc-task', 'dos'),
      update('tools', [new ToolMessage({ id: 'tm-9', tool_call_id: 'tc-task', content: 'only allowed types are `class_teacher`' })]),
      token(text('m9', 'Sorry.')),
    ]);
    expect(types(events)).toEqual(['TOOL_CALL_RESULT', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT']);
    expect(events.some((event) => 'subagentRunId' in event)).toBe(false);
    expect(subject.end()).toEqual([{ type: 'TEXT_MESSAGE_END', messageId: expect.any(String) }]);
  });
});

describe('RunEventTranslator: other chunks', () => {
  it('relays only streamOnSuccess-shaped custom chunks', () => {
    expect(translator().translate([[], 'custom', { name: 'department.created', label: 'Created', auditId: 'a1' }])).toEqual([
      { type: 'CUSTOM', name: 'department.created', value: { label: 'Created', auditId: 'a1' } },
    ]);
    expect(translator().translate([[], 'custom', 'progress 50%'])).toEqual([]);
    expect(translator().translate([[], 'custom', { step: 1 }])).toEqual([]);
  });

  it('ignores interrupt updates, other tasks and unknown modes (interrupts are read from the checkpoint)', () => {
    expect(translator().translate([[], 'updates', { __interrupt__: [{ id: 'i1', value: {} }] }])).toEqual([]);
    expect(translator().translate([[], 'tasks', { id: 't', name: 'model_request', input: {} }])).toEqual([]);
    expect(translator().translate([[], 'values', {}])).toEqual([]);
  });
});

describe('snapshotMessages', () => {
  const conversation = [
    new HumanMessage({ id: 'h1', content: 'list the staff' }),
    new AIMessage({ id: 'a1', name: 'rover', content: '', tool_calls: [{ id: 'tc-1', name: 'list_staff', args: { q: 1 }, type: 'tool_call' }] }),
    new ToolMessage({ id: 't1', tool_call_id: 'tc-1', content: '{"data":[]}' }),
    new AIMessage({ id: 'a2', name: 'dos', content: 'Nobody.' }),
  ];

  it('converts the conversation to AG-UI messages: user, assistant with its speaker and tool calls, tool results', () => {
    expect(snapshotMessages(conversation)).toEqual([
      { id: 'h1', role: 'user', content: 'list the staff' },
      { id: 'a1', role: 'assistant', name: 'rover', toolCalls: [{ id: 'tc-1', type: 'function', function: { name: 'list_staff', arguments: '{"q":1}' } }] },
      { id: 't1', role: 'tool', toolCallId: 'tc-1', content: '{"data":[]}' },
      { id: 'a2', role: 'assistant', name: 'dos', content: 'Nobody.' },
    ]);
  });

  it('keeps the newest messages within its budget, and never a tool result whose call was left out', () => {
    const long = 'x'.repeat(SNAPSHOT_BUDGET_BYTES / 4);
    const thread = Array.from({ length: 12 }, (_, index) => new HumanMessage({ id: `old-${index}`, content: long }));
    const kept = snapshotMessages([...thread, ...conversation]);
    expect(Buffer.byteLength(JSON.stringify(kept))).toBeLessThanOrEqual(SNAPSHOT_BUDGET_BYTES);
    expect(kept.at(-1)).toMatchObject({ id: 'a2' });
    expect(kept.length).toBeGreaterThan(conversation.length);
    expect(kept.length).toBeLessThan(thread.length + conversation.length);
    // A budget that holds the result but not its call drops the orphaned result too.
    expect(snapshotMessages(conversation.slice(1, 3), 60).map((message) => message.id)).toEqual([]);
  });
});

describe('toAgentInterrupts', () => {
  it('maps ask_user interrupts to the contract, and surfaces any other interrupt as a question from Rover', () => {
    const asked = { question: 'Which class?', askedBy: 'class_teacher', toolCallId: 'tc-ask', argsHash: askUserArgsHash({ question: 'Which class?' }) };
    expect(toAgentInterrupts([{ id: 'i1', value: asked }, { id: 'i2', value: { action: 'approve' } }, { value: 'no id' }])).toEqual([
      { interruptId: 'i1', ...asked },
      { interruptId: 'i2', question: '{"action":"approve"}', askedBy: 'rover' },
    ]);
  });
});
