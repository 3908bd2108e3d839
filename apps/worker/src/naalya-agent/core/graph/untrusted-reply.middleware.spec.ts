import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { DECLINED_REPLY, answerableReply } from './untrusted-reply.middleware.js';

const asked = [new HumanMessage('create a department')];

describe('answerableReply: what the agent may act on in an untrusted reply', () => {
  it('a streamed call whose arguments were cut off (LangChain repaired them) is malformed, not run with a half argument', () => {
    const reply = new AIMessage({
      id: 'm1',
      content: '',
      tool_calls: [
        { type: 'tool_call', id: 'c-cut', name: 'create_department', args: { name: 'Scien' } },
        { type: 'tool_call', id: 'c-ok', name: 'list_departments', args: {} },
      ],
      additional_kwargs: {
        tool_calls: [
          { id: 'c-cut', type: 'function', function: { name: 'create_department', arguments: '{"name": "Scien' } },
          { id: 'c-ok', type: 'function', function: { name: 'list_departments', arguments: '{}' } },
        ],
      },
    });
    const answerable = answerableReply(reply, asked);
    expect(answerable.tool_calls).toEqual([
      { type: 'tool_call', id: 'c-ok', name: 'list_departments', args: {} },
      { type: 'tool_call', id: 'c-cut', name: 'create_department', args: {} },
    ]);
    expect(answerable.invalid_tool_calls).toEqual([expect.objectContaining({ id: 'c-cut', args: '{"name": "Scien' })]);
    expect(answerable.id).toBe('m1');
  });

  it("Anthropic's streamed input that is not JSON is read from its content block's deltas", () => {
    const reply = new AIMessage({
      content: [
        { index: 0, type: 'tool_use', id: 'c-anth', name: 'create_department', input: '' },
        { index: 0, type: 'input_json_delta', input: '{"name": "Sci' },
      ],
      tool_calls: [{ type: 'tool_call', id: 'c-anth', name: 'create_department', args: { name: 'Sci' } }],
    });
    expect(answerableReply(reply, asked).invalid_tool_calls).toEqual([expect.objectContaining({ id: 'c-anth' })]);
  });

  it('complete arguments and a plain answer pass unchanged', () => {
    const reply = new AIMessage({
      content: '',
      tool_calls: [{ type: 'tool_call', id: 'c1', name: 'create_department', args: { name: 'Sciences' } }],
      additional_kwargs: { tool_calls: [{ id: 'c1', type: 'function', function: { name: 'create_department', arguments: '{"name":"Sciences"}' } }] },
    });
    expect(answerableReply(reply, asked)).toBe(reply);
    const text = new AIMessage('Hello.');
    expect(answerableReply(text, asked)).toBe(text);
  });

  it('no words in answer to the user is a refusal; no words after a tool result is a model with nothing to add', () => {
    expect(answerableReply(new AIMessage(''), asked).content).toBe(DECLINED_REPLY);
    const afterTool = [...asked, new AIMessage({ content: '', tool_calls: [{ id: 't', name: 'task', args: {} }] }), new ToolMessage({ content: 'done', tool_call_id: 't' })];
    expect(answerableReply(new AIMessage(''), afterTool).content).toBe('');
  });
});
