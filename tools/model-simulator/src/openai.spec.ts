import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatOpenAI } from '@langchain/openai';
import { AIMessageChunk, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { startModelSimulator, type ModelSimulator, type TurnInput } from './index.js';

/** The simulator as the real OpenAI provider package sees it, over real HTTP. */

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
  return new ChatOpenAI({ model: 'sim', apiKey: 'test', maxRetries, configuration: { baseURL: `${sim.url}/v1` } });
}

async function streamAll(chat: ChatOpenAI | ReturnType<ChatOpenAI['bindTools']>, input = 'hello') {
  const chunks: AIMessageChunk[] = [];
  for await (const chunk of await chat.stream(input)) chunks.push(chunk as AIMessageChunk);
  const message = chunks.reduce((sum, chunk) => sum.concat(chunk));
  return { chunks, message };
}

describe('model simulator, OpenAI Chat Completions through @langchain/openai', () => {
  it('streams scripted text in several chunks that join to the text', async () => {
    const { chunks, message } = await streamAll(model([{ kind: 'text', text: 'Hello from the simulator', chunks: 4 }]));
    expect(chunks.filter((chunk) => chunk.content !== '').length).toBe(4);
    expect(message.content).toBe('Hello from the simulator');
  });

  it('answers a non-streaming request with the whole text and the scripted usage', async () => {
    const reply = await model([{ kind: 'text', text: 'All at once', usage: { inputTokens: 42, outputTokens: 7 } }]).invoke('hi');
    expect(reply.content).toBe('All at once');
    expect(reply.usage_metadata).toMatchObject({ input_tokens: 42, output_tokens: 7, total_tokens: 49 });
  });

  it('reports the scripted token counts in a streamed reply', async () => {
    const { message } = await streamAll(model([{ kind: 'text', text: 'counted', usage: { inputTokens: 120, outputTokens: 30 } }]));
    expect(message.usage_metadata).toMatchObject({ input_tokens: 120, output_tokens: 30, total_tokens: 150 });
  });

  it('streams a tool call whose arguments arrive in fragments and parse to the scripted arguments', async () => {
    const chat = model([{ kind: 'tool_calls', calls: [{ id: 'call_1', name: 'lookup_staff', arguments: { name: 'Amina', campus: 2 } }], chunks: 5 }]).bindTools([lookup]);
    const { chunks, message } = await streamAll(chat);
    const fragments = chunks.flatMap((chunk) => chunk.tool_call_chunks ?? []).filter((fragment) => fragment.args);
    expect(fragments.length).toBe(5);
    expect(message.tool_calls).toEqual([{ id: 'call_1', name: 'lookup_staff', args: { name: 'Amina', campus: 2 }, type: 'tool_call' }]);
  });

  it('streams parallel tool calls as separate calls', async () => {
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
    expect(new Set(message.tool_calls?.map((call) => call.id)).size).toBe(2);
  });

  it('surfaces malformed tool arguments as an invalid tool call', async () => {
    const chat = model([{ kind: 'malformed_tool_call', name: 'lookup_staff', rawArguments: '{"name": "Ami' }]).bindTools([lookup]);
    const reply = await chat.invoke('hi');
    expect(reply.tool_calls).toEqual([]);
    expect(reply.invalid_tool_calls).toMatchObject([{ name: 'lookup_staff', args: '{"name": "Ami' }]);
  });

  it('calls a tool the request did not offer when scripted to', async () => {
    const chat = model([{ kind: 'unknown_tool', name: 'drop_tables', arguments: { all: true } }]).bindTools([lookup]);
    const reply = await chat.invoke('hi');
    expect(reply.tool_calls).toMatchObject([{ name: 'drop_tables', args: { all: true } }]);
    expect((sim.requests()[0]?.body as { tools: { function: { name: string } }[] }).tools.map((t) => t.function.name)).toEqual(['lookup_staff']);
  });

  it('sends a refusal in the refusal field of the message, with no content', async () => {
    sim.reset();
    sim.setScript({ turns: [{ kind: 'refusal', text: 'I will not do that.' }] });
    // LangChain's Chat Completions path does not lift `refusal` onto the message, so read it off the raw response.
    const chat = new ChatOpenAI({ model: 'sim', apiKey: 'test', maxRetries: 0, __includeRawResponse: true, configuration: { baseURL: `${sim.url}/v1` } });
    const reply = await chat.invoke('hi');
    const raw = reply.additional_kwargs['__raw_response'] as { choices: { message: { content: unknown; refusal: unknown } }[] };
    expect(raw.choices[0]?.message).toMatchObject({ content: null, refusal: 'I will not do that.' });
    expect(reply.content).toBe('');
  });

  it('holds back the first token for the scripted delay', async () => {
    const chat = model([{ kind: 'text', text: 'slow', delayMs: 400 }]);
    const started = Date.now();
    const stream = await chat.stream('hi');
    for await (const chunk of stream) {
      if (chunk.content !== '') break;
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
  });

  it('records the messages and tools the model was sent', async () => {
    const chat = model([{ kind: 'text', text: 'ok' }]).bindTools([lookup]);
    await chat.invoke([new SystemMessage('You are Rover.'), new HumanMessage('Who teaches S4?')]);
    const [request] = sim.requests();
    expect(request).toMatchObject({ api: 'openai', method: 'POST', path: '/v1/chat/completions', turn: 0 });
    expect(request?.headers['authorization']).toBeUndefined();
    expect(request?.body).toMatchObject({
      model: 'sim',
      messages: [
        { role: 'system', content: 'You are Rover.' },
        { role: 'user', content: 'Who teaches S4?' },
      ],
      tools: [{ type: 'function', function: { name: 'lookup_staff', parameters: { properties: { name: { type: 'string' }, campus: { type: 'number' } } } } }],
    });
  });
});
