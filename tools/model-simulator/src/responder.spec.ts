import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { HumanMessage, SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { startModelSimulator, type ModelSimulator, type ResponderRequest } from './index.js';

/** Responder mode: each request answered by a function of the request, on both APIs, instead of a script. */

let sim: ModelSimulator;
beforeAll(async () => {
  sim = await startModelSimulator();
});
afterAll(() => sim.close());

const lookup = tool(async () => 'ok', { name: 'lookup_staff', description: 'Find a staff member', schema: z.object({ name: z.string() }) });
const openai = () => new ChatOpenAI({ model: 'sim', apiKey: 'test', maxRetries: 0, configuration: { baseURL: `${sim.url}/v1` } });
const anthropic = () => new ChatAnthropic({ model: 'sim', apiKey: 'test', maxRetries: 0, anthropicApiUrl: sim.url });
const conversation = [new SystemMessage('Be brief.'), new HumanMessage('Who is Amina?')];

describe('model simulator responder', () => {
  it('gives an OpenAI request to the responder (system prompt as a message, tools in the OpenAI shape) and answers with its turn', async () => {
    const seen: ResponderRequest[] = [];
    sim.reset();
    sim.setResponder((request) => {
      seen.push(request);
      return { kind: 'tool_calls', calls: [{ id: 'call_r', name: 'lookup_staff', arguments: { name: 'Amina' } }] };
    });
    const reply = await openai().bindTools([lookup]).invoke(conversation);
    expect(reply.tool_calls).toEqual([{ id: 'call_r', name: 'lookup_staff', args: { name: 'Amina' }, type: 'tool_call' }]);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ api: 'openai', model: 'sim', messages: [{ content: 'Be brief.' }, { role: 'user', content: 'Who is Amina?' }] });
    expect(seen[0]?.system).toBeUndefined();
    expect(seen[0]?.tools).toMatchObject([{ type: 'function', function: { name: 'lookup_staff', parameters: { properties: { name: { type: 'string' } } } } }]);
    expect(sim.requests()).toMatchObject([{ api: 'openai', turn: 0, usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) } }]);
  });

  it('gives an Anthropic request to the responder with its separate system prompt and tools in the Anthropic shape', async () => {
    const seen: ResponderRequest[] = [];
    sim.reset();
    sim.setResponder(async (request) => {
      seen.push(request);
      return { kind: 'text', text: 'Amina teaches S4.', usage: { inputTokens: 11, outputTokens: 5 } };
    });
    const reply = await anthropic().bindTools([lookup]).invoke(conversation);
    expect(reply.content).toBe('Amina teaches S4.');
    expect(seen[0]).toMatchObject({ api: 'anthropic', system: 'Be brief.', messages: [{ role: 'user', content: 'Who is Amina?' }] });
    expect(seen[0]?.tools).toMatchObject([{ name: 'lookup_staff', input_schema: { properties: { name: { type: 'string' } } } }]);
    expect(sim.requests()).toMatchObject([{ api: 'anthropic', turn: 0, usage: { inputTokens: 11, outputTokens: 5 } }]);
  });

  it('answers a responder that throws, or returns a turn that is not one, with a 400 naming the problem', async () => {
    sim.reset();
    sim.setResponder(() => {
      throw new Error('no idea what to say');
    });
    await expect(openai().invoke('hi')).rejects.toThrow(/the responder failed: no idea what to say/);
    sim.setResponder(() => ({ kind: 'sing' }) as never);
    await expect(anthropic().invoke('hi')).rejects.toThrow(/invalid model simulator turn/);
    expect(sim.requests().map((request) => request.turn)).toEqual([null, null]);
  });

  it('goes back to the script when the responder is removed', async () => {
    sim.reset();
    sim.setResponder(() => ({ kind: 'text', text: 'from the responder' }));
    sim.setScript({ turns: [{ kind: 'text', text: 'from the script' }] });
    expect((await openai().invoke('hi')).content).toBe('from the responder');
    sim.setResponder(undefined);
    expect((await openai().invoke('hi')).content).toBe('from the script');
  });
});
