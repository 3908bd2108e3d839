import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { startModelSimulator, type ModelSimulator } from '@naalya/model-simulator';
import { scriptedPolicy } from '@naalya/worker/testing';
import { policyResponder } from './scripted-policy.responder.js';
import { toLangChain, toTurn } from './wire-messages.js';

/**
 * The conversion both ways, through the real provider packages: LangChain messages go out on each wire and come back
 * the same from toLangChain; a reply made by toTurn arrives as the message it was made from.
 */

let sim: ModelSimulator;
beforeAll(async () => {
  sim = await startModelSimulator();
});
afterAll(() => sim.close());

const departments = tool(async () => 'ok', {
  name: 'list_departments',
  description: 'List the departments',
  schema: z.object({ campusId: z.string().optional() }),
});
const remove = tool(async () => 'ok', { name: 'delete_department', description: 'Delete a department', schema: z.object({ departmentId: z.string() }) });

const PROVIDERS = {
  openai: () => new ChatOpenAI({ model: 'sim', apiKey: 'test', maxRetries: 0, configuration: { baseURL: `${sim.url}/v1` } }),
  anthropic: () => new ChatAnthropic({ model: 'sim', apiKey: 'test', maxRetries: 0, anthropicApiUrl: sim.url }),
};

// A turn with everything a run holds: a system prompt, the request, parallel tool calls, their results, an answer.
const conversation: BaseMessage[] = [
  new SystemMessage('You are Rover.'),
  new HumanMessage('list departments and delete Drama'),
  new AIMessage({
    content: '',
    tool_calls: [
      { id: 'call_a', name: 'list_departments', args: {}, type: 'tool_call' },
      { id: 'call_b', name: 'delete_department', args: { departmentId: 'd-1' }, type: 'tool_call' },
    ],
  }),
  new ToolMessage({ content: '{"data":[{"id":"d-1","name":"Drama"}],"scopeContext":"Your access covers the whole school."}', tool_call_id: 'call_a' }),
  new ToolMessage({ content: '{"error":"Department not found.","code":"NOT_FOUND"}', tool_call_id: 'call_b' }),
  new AIMessage('That did not work.'),
  new HumanMessage('try again'),
];

const shapeOf = (messages: BaseMessage[]) =>
  messages.map((message) => ({
    type: message.type,
    content: message.content,
    ...(AIMessage.isInstance(message) && message.tool_calls?.length ? { toolCalls: message.tool_calls.map(({ id, name, args }) => ({ id, name, args })) } : {}),
    ...(ToolMessage.isInstance(message) ? { toolCallId: message.tool_call_id } : {}),
  }));

describe.each(Object.entries(PROVIDERS))('wire messages over %s', (_provider, model) => {
  it('reads the request back as the LangChain conversation and tools that were sent', async () => {
    let seen: ReturnType<typeof toLangChain> | undefined;
    sim.reset();
    sim.setResponder((request) => {
      seen = toLangChain(request);
      return { kind: 'text', text: 'ok' };
    });
    await model().bindTools([departments, remove]).invoke(conversation);
    expect(shapeOf(seen?.messages ?? [])).toEqual(shapeOf(conversation));
    expect(seen?.tools.map((entry) => entry.name)).toEqual(['list_departments', 'delete_department']);
    expect(seen?.tools[1]).toMatchObject({ description: 'Delete a department', parameters: { type: 'object', properties: { departmentId: { type: 'string' } }, required: ['departmentId'] } });
  });

  it('delivers a reply made by toTurn as the message it was made from: parallel tool calls with their ids, or text', async () => {
    const calls = new AIMessage({
      content: '',
      tool_calls: [
        { id: 'call_x', name: 'list_departments', args: { campusId: 'c-1' }, type: 'tool_call' },
        { id: 'call_y', name: 'delete_department', args: { departmentId: 'd-2' }, type: 'tool_call' },
      ],
    });
    sim.setResponder(() => toTurn(calls));
    const received = await model().bindTools([departments, remove]).invoke('go');
    expect(received.tool_calls?.map(({ id, name, args }) => ({ id, name, args }))).toEqual(calls.tool_calls?.map(({ id, name, args }) => ({ id, name, args })));
    sim.setResponder(() => toTurn(new AIMessage('[scripted model] Done.')));
    expect((await model().invoke('go')).content).toBe('[scripted model] Done.');
  });

  it('plays the worker scripted policy: a plain request becomes the tool call the policy makes offline', async () => {
    sim.setResponder(policyResponder(scriptedPolicy));
    const reply = await model().bindTools([departments, remove]).invoke([new SystemMessage('You are Rover.'), new HumanMessage('list departments')]);
    expect(reply.tool_calls).toMatchObject([{ name: 'list_departments', args: {} }]);
    expect(reply.tool_calls?.[0]?.id).toMatch(/^call_/);
  });
});

describe('toTurn', () => {
  it('turns text blocks into text and keeps tool calls without an id as calls', () => {
    expect(toTurn(new AIMessage({ content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }))).toEqual({ kind: 'text', text: 'ab' });
    expect(toTurn(new AIMessage({ content: '', tool_calls: [{ name: 'clock', args: {}, type: 'tool_call' }] }))).toEqual({
      kind: 'tool_calls',
      calls: [{ name: 'clock', arguments: {} }],
    });
  });
});

describe('toLangChain', () => {
  it('keeps an Anthropic user message that carries a tool result and text as a tool message, then a human one', () => {
    const { messages } = toLangChain({
      api: 'anthropic',
      model: 'sim',
      tools: [],
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'clock', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: '{"now":"x"}' }] }, { type: 'text', text: 'and now?' }] },
      ],
    });
    expect(shapeOf(messages)).toEqual([
      { type: 'human', content: 'hi' },
      { type: 'ai', content: '', toolCalls: [{ id: 'toolu_1', name: 'clock', args: {} }] },
      { type: 'tool', content: '{"now":"x"}', toolCallId: 'toolu_1' },
      { type: 'human', content: 'and now?' },
    ]);
  });
});
