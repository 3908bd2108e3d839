import type { AgentRunEvent, AgentRuntimeContext, RunEventBatch } from '@naalya/agent-tools';
import { AIMessage, AIMessageChunk, HumanMessage } from '@langchain/core/messages';
import { concat } from '@langchain/core/utils/stream';
import { MemorySaver } from '@langchain/langgraph';
import { describe, expect, it } from 'vitest';
import { AgentRunExecutor } from '../../runs/agent-run.executor.js';
import { acceptedByAgUi } from '../../testing/ag-ui-events.fixture.js';
import { FakeRunLeases, TEST_DISPATCH_TOKEN } from '../../testing/fake-run-leases.fixture.js';
import { FakeToolCaller } from '../../testing/fake-tool-caller.fixture.js';
import { schoolContext } from '../tools/tool-context.fixture.js';
import { ScriptedChatModel, streamedChunks, textPieces } from './scripted-chat-model.js';
import { scriptedPolicy } from './scripted-policy.js';
import { FakeRunUsage } from '../../testing/fake-run-usage.fixture.js';

const reply = new AIMessage({
  content: '[scripted model] I found 3 staff: Ada, Brian, Grace.',
  tool_calls: [
    { id: 'c1', name: 'create_department', args: { name: 'Sciences and Technology', campusId: 'x'.repeat(20) }, type: 'tool_call' },
    { id: 'c2', name: 'clock', args: {}, type: 'tool_call' },
  ],
});
const fixed = (message: AIMessage) => () => message;

const collect = async (model: ScriptedChatModel, signal?: AbortSignal) => {
  const chunks: AIMessageChunk[] = [];
  for await (const chunk of await model.stream([new HumanMessage('hi')], { signal })) chunks.push(chunk);
  return chunks;
};

describe('ScriptedChatModel streams like a provider', () => {
  it('splits text word by word into pieces that concatenate to it exactly, spaces included', () => {
    expect(textPieces('a  b c ')).toEqual(['a', '  b', ' c', ' ']);
    expect(textPieces('').join('')).toBe('');
  });

  it("streams the text in several chunks and each call's arguments in several tool_call_chunks, which concatenate to the reply", async () => {
    const chunks = await collect(new ScriptedChatModel(fixed(reply)));
    expect(chunks.filter((chunk) => typeof chunk.content === 'string' && chunk.content !== '').length).toBeGreaterThan(3);
    const first = chunks.flatMap((chunk) => chunk.tool_call_chunks ?? []).filter((piece) => piece.index === 0);
    expect(first.length).toBeGreaterThan(3);
    expect(first[0]).toMatchObject({ id: 'c1', name: 'create_department' });
    expect(first.slice(1).every((piece) => piece.id === undefined)).toBe(true);
    const whole = chunks.reduce((left, right) => concat(left, right));
    expect(whole.content).toBe(reply.content);
    expect(whole.tool_calls?.map(({ id, name, args }) => ({ id, name, args }))).toEqual(reply.tool_calls?.map(({ id, name, args }) => ({ id, name, args })));
  });

  it('still answers whole when invoked (no streaming handler), with the same message', async () => {
    const message = await new ScriptedChatModel(fixed(reply)).invoke([new HumanMessage('hi')]);
    expect(message.content).toBe(reply.content);
    expect(message.tool_calls?.map((call) => call.args)).toEqual(reply.tool_calls?.map((call) => call.args));
  });

  it('paces its chunks by streamDelayMs, keeps it once tools are bound, and stops between chunks when the run is aborted', async () => {
    const text = new AIMessage({ content: 'one two three four five' });
    const startedAt = performance.now();
    await collect(new ScriptedChatModel(fixed(text), { streamDelayMs: 60 }).bindTools([]));
    // Five chunks, four pauses.
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(4 * 60 - 5);

    // Unpaced, the same reply takes well under one pause per chunk (a loose bound: the machine may be busy).
    const quick = performance.now();
    await collect(new ScriptedChatModel(fixed(text)));
    expect(performance.now() - quick).toBeLessThan(4 * 60 - 5);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    await expect(collect(new ScriptedChatModel(fixed(text), { streamDelayMs: 1_000 }), controller.signal)).rejects.toThrow();
  });

  it('streams an empty reply as one empty chunk (a model call always yields something)', () => {
    expect(streamedChunks(new AIMessage(''))).toHaveLength(1);
  });
});

describe('a scripted run streams through the executor', () => {
  const runOnce = async (message: string) => {
    const events: AgentRunEvent[] = [];
    const executor = new AgentRunExecutor({
      toolCaller: new FakeToolCaller().answer('list.staff', { data: [{ id: 's1', fullName: 'Ada Nakato' }, { id: 's2', fullName: 'Brian Mugisha' }], scopeContext: 'You can see the whole school.' }),
      checkpointer: new MemorySaver(),
      events: { publish: async (batch: RunEventBatch) => void events.push(...batch.events) },
      leases: new FakeRunLeases(),
      usage: new FakeRunUsage(),
      chatModel: () => new ScriptedChatModel(scriptedPolicy),
      logger: { log: () => undefined, error: () => undefined, warn: () => undefined },
    });
    const context: AgentRuntimeContext = {
      ...schoolContext(),
      capabilities: { isClassTeacher: true, isSubjectTeacher: true, isDirectorOfStudies: true },
      run: { runId: 'run-stream', threadId: 'thread-stream' },
      dispatchToken: TEST_DISPATCH_TOKEN,
    };
    await executor.execute({ kind: 'start', context, message });
    return events;
  };

  it('sends the reply as several TEXT_MESSAGE_CONTENT deltas of one message, each once, and the call arguments as deltas', async () => {
    const events = await runOnce('show the staff');
    const starts = events.filter((event) => event.type === 'TEXT_MESSAGE_START');
    expect(starts).toHaveLength(1);
    const deltas = events.flatMap((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? [event.delta] : []));
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join('')).toMatch(/^\[scripted model\] I found 2 staff: Ada Nakato, Brian Mugisha\./);
    expect(events.filter((event) => event.type === 'TOOL_CALL_START').map((event) => event.type === 'TOOL_CALL_START' && event.toolCallName)).toEqual(['list_staff']);
    const args = events.flatMap((event) => (event.type === 'TOOL_CALL_ARGS' ? [event.delta] : []));
    expect(JSON.parse(args.join(''))).toEqual({});
    // Timestamps are stamped as events are made: they never go back.
    const stamps = events.map((event) => event.timestamp ?? 0);
    expect(stamps.every((stamp, index) => stamp > 0 && (index === 0 || stamp >= stamps[index - 1]))).toBe(true);
    expect(await acceptedByAgUi(events)).toBe(events.length);
  });

  it("streams a specialist's reply under its subagent, the task call's arguments concatenating to its JSON", async () => {
    const events = await runOnce('list my classes');
    const opened = events.find((event) => event.type === 'SUBAGENT_STARTED');
    expect(opened).toMatchObject({ name: 'class_teacher' });
    const taskStart = events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === 'task');
    const taskId = taskStart?.type === 'TOOL_CALL_START' ? taskStart.toolCallId : '';
    const taskArgs = events.flatMap((event) => (event.type === 'TOOL_CALL_ARGS' && event.toolCallId === taskId ? [event.delta] : []));
    expect(taskArgs.length).toBeGreaterThan(1);
    expect(JSON.parse(taskArgs.join(''))).toEqual({ description: 'list my classes', subagent_type: 'class_teacher' });
    const specialistText = events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT' && event.subagentRunId !== undefined);
    expect(specialistText.length).toBeGreaterThan(3);
  });
});


describe('ScriptedChatModel usage', () => {
  it('reports estimated tokens (about four characters each) of what it was sent and what it said, streamed or not, so budgets count it', async () => {
    const model = new ScriptedChatModel(() => new AIMessage('[scripted model] Twelve characters more.'));
    const sent = [new HumanMessage('list departments please')];
    const whole = await model.invoke(sent);
    expect(whole.usage_metadata).toEqual({ input_tokens: 6, output_tokens: 11, total_tokens: 17 });
    let streamed: AIMessageChunk | undefined;
    for await (const chunk of await model.stream(sent)) streamed = streamed ? streamed.concat(chunk) : chunk;
    expect(streamed?.usage_metadata).toMatchObject({ input_tokens: 6, output_tokens: 11 });
  });
});
