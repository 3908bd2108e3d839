import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatAnthropic } from '@langchain/anthropic';
import type { AIMessageChunk } from '@langchain/core/messages';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { startModelSimulator, type ModelSimulator, type TurnInput } from './index.js';

/** The simulator as the real Anthropic provider package sees it, over real HTTP. */

let sim: ModelSimulator;
beforeAll(async () => {
  sim = await startModelSimulator();
});
afterAll(() => sim.close());

const lookup = tool(async () => 'ok', { name: 'lookup_staff', description: 'Find a staff member', schema: z.object({ name: z.string(), campus: z.number() }) });
const grades = tool(async () => 'ok', { name: 'list_grades', description: 'List grades', schema: z.object({ classId: z.string() }) });

function model(turns: TurnInput[], maxRetries = 0) {
  sim.reset();
  sim.setScript({ turns });
  return new ChatAnthropic({ model: 'sim', apiKey: 'test', maxRetries, anthropicApiUrl: sim.url });
}

async function streamAll(chat: ChatAnthropic | ReturnType<ChatAnthropic['bindTools']>, input = 'hello') {
  const chunks: AIMessageChunk[] = [];
  for await (const chunk of await chat.stream(input)) chunks.push(chunk as AIMessageChunk);
  const message = chunks.reduce((sum, chunk) => sum.concat(chunk));
  return { chunks, message };
}

const textOf = (message: AIMessageChunk) => (typeof message.content === 'string' ? message.content : message.content.map((part) => ('text' in part ? part.text : '')).join(''));

describe('model simulator, Anthropic Messages through @langchain/anthropic', () => {
  it('streams scripted text in several text_delta chunks that join to the text', async () => {
    const { chunks, message } = await streamAll(model([{ kind: 'text', text: 'Hello from the simulator', chunks: 4 }]));
    expect(chunks.filter((chunk) => textOf(chunk) !== '').length).toBe(4);
    expect(textOf(message)).toBe('Hello from the simulator');
  });

  it('answers a non-streaming request with the whole text and the scripted usage', async () => {
    const reply = await model([{ kind: 'text', text: 'All at once', usage: { inputTokens: 42, outputTokens: 7 } }]).invoke('hi');
    expect(reply.content).toBe('All at once');
    expect(reply.usage_metadata).toMatchObject({ input_tokens: 42, output_tokens: 7, total_tokens: 49 });
  });

  it('reports the scripted token counts in a streamed reply (message_start and message_delta)', async () => {
    const { message } = await streamAll(model([{ kind: 'text', text: 'counted', usage: { inputTokens: 120, outputTokens: 30 } }]));
    expect(message.usage_metadata).toMatchObject({ input_tokens: 120, output_tokens: 30 });
  });

  it('streams a tool call whose input_json_delta fragments parse to the scripted arguments', async () => {
    const chat = model([{ kind: 'tool_calls', calls: [{ id: 'toolu_1', name: 'lookup_staff', arguments: { name: 'Amina', campus: 2 } }], chunks: 5 }]).bindTools([lookup]);
    const { chunks, message } = await streamAll(chat);
    const fragments = chunks.flatMap((chunk) => chunk.tool_call_chunks ?? []).filter((fragment) => fragment.args);
    expect(fragments.length).toBe(5);
    expect(message.tool_calls).toMatchObject([{ id: 'toolu_1', name: 'lookup_staff', args: { name: 'Amina', campus: 2 } }]);
  });

  it('streams parallel tool calls as separate tool_use blocks', async () => {
    const chat = model([
      {
        kind: 'tool_calls',
        calls: [
          { name: 'lookup_staff', arguments: { name: 'Amina', campus: 2 } },
          { name: 'list_grades', arguments: { classId: 'S4' } },
        ],
      },
    ]).bindTools([lookup, grades]);
    const { message } = await streamAll(chat);
    expect(message.tool_calls?.map((call) => [call.name, call.args])).toEqual([
      ['lookup_staff', { name: 'Amina', campus: 2 }],
      ['list_grades', { classId: 'S4' }],
    ]);
  });

  it('reports truncated streamed tool input as LangChain repairs it: the partial JSON completed into arguments', async () => {
    // Worth knowing: @langchain/anthropic parses streamed input leniently, so truncated arguments become a valid call.
    const chat = model([{ kind: 'malformed_tool_call', name: 'lookup_staff', rawArguments: '{"name": "Ami' }]).bindTools([lookup]);
    const { message } = await streamAll(chat);
    expect(message.tool_calls).toMatchObject([{ name: 'lookup_staff', args: { name: 'Ami' } }]);
  });

  it('reports streamed tool input that is not JSON at all as an invalid tool call', async () => {
    const chat = model([{ kind: 'malformed_tool_call', name: 'lookup_staff', rawArguments: 'name=Amina; campus=2' }]).bindTools([lookup]);
    const { message } = await streamAll(chat);
    expect(message.tool_calls).toEqual([]);
    expect(message.invalid_tool_calls).toMatchObject([{ name: 'lookup_staff', args: 'name=Amina; campus=2', error: 'Malformed args.' }]);
  });

  it('ends a refusal with stop_reason refusal', async () => {
    const reply = await model([{ kind: 'refusal', text: 'I will not do that.' }]).invoke('hi');
    expect(reply.content).toBe('I will not do that.');
    expect(reply.response_metadata['stop_reason']).toBe('refusal');
  });

  it('records the system prompt, messages and tools the model was sent', async () => {
    const chat = model([{ kind: 'text', text: 'ok' }]).bindTools([lookup]);
    await chat.invoke([new SystemMessage('You are Rover.'), new HumanMessage('Who teaches S4?')]);
    const [request] = sim.requests();
    expect(request).toMatchObject({ api: 'anthropic', method: 'POST', path: '/v1/messages', turn: 0 });
    expect(request?.headers['x-api-key']).toBeUndefined();
    expect(request?.body).toMatchObject({
      model: 'sim',
      system: 'You are Rover.',
      messages: [{ role: 'user', content: 'Who teaches S4?' }],
      tools: [{ name: 'lookup_staff', input_schema: { properties: { name: { type: 'string' }, campus: { type: 'number' } } } }],
    });
  });
});
