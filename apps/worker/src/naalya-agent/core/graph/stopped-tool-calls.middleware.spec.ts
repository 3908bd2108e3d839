import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { toolCallIdempotencyKey } from '../tools/build-agent-tools.js';
import { answerStoppedToolCalls, stoppedToolCallMessage } from './stopped-tool-calls.middleware.js';

const call = (name: string, id: string) => ({ name, args: {}, id, type: 'tool_call' as const });

describe('answerStoppedToolCalls', () => {
  it('answers a call left without a result right after its AI message, and leaves the rest as it was', () => {
    const asked = new HumanMessage({ id: 'h1', content: 'create Sciences' });
    const ai = new AIMessage({ id: 'a1', content: '', tool_calls: [call('create_department', 'tc-1')] });
    const next = new HumanMessage({ id: 'h2', content: 'hello again' });

    const patched = answerStoppedToolCalls([asked, ai, next], 'thread-1');

    expect(patched?.map((message) => message.type)).toEqual(['human', 'ai', 'tool', 'human']);
    const answer = patched?.[2] as ToolMessage;
    expect(answer.tool_call_id).toBe('tc-1');
    expect(answer.content).toBe(stoppedToolCallMessage('create_department', toolCallIdempotencyKey('thread-1', 'tc-1')));
    expect(answer.content).toContain(`get_tool_call_outcome and callId "${toolCallIdempotencyKey('thread-1', 'tc-1')}"`);
    expect(answer.content).toContain('The change may have been saved.');
  });

  it('a read is only said to be stopped; a local tool or a specialist task may have changed things', () => {
    expect(stoppedToolCallMessage('list_staff', 'x'.repeat(64))).not.toContain('get_tool_call_outcome');
    expect(stoppedToolCallMessage('list_staff')).not.toContain('saved');
    expect(stoppedToolCallMessage('task')).toContain('Anything it changed may have been saved.');
  });

  it('changes nothing when every call has its result', () => {
    const ai = new AIMessage({ content: '', tool_calls: [call('list_staff', 'tc-1'), call('clock', 'tc-2')] });
    const messages = [new HumanMessage('hi'), ai, new ToolMessage({ content: '[]', tool_call_id: 'tc-1' }), new ToolMessage({ content: 'now', tool_call_id: 'tc-2' })];

    expect(answerStoppedToolCalls(messages, 'thread-1')).toBeUndefined();
  });

  it('answers only the calls of a parallel batch that are missing', () => {
    const ai = new AIMessage({ content: '', tool_calls: [call('list_staff', 'tc-1'), call('create_department', 'tc-2')] });
    const patched = answerStoppedToolCalls([ai, new ToolMessage({ content: '[]', tool_call_id: 'tc-1' }), new HumanMessage('again')]);

    expect(patched?.map((message) => (message.type === 'tool' ? `tool:${(message as ToolMessage).tool_call_id}` : message.type))).toEqual([
      'ai',
      'tool:tc-2',
      'tool:tc-1',
      'human',
    ]);
  });
});
