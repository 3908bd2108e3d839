import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatAnthropic } from '@langchain/anthropic';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import type { BaseMessage } from '@langchain/core/messages';
import { ChatOpenAI } from '@langchain/openai';
import { startModelSimulator, type ModelSimulator, type TurnInput } from './index.js';

/** Failures on the wire that both provider packages meet the same way: the same script, the same outcome. */

let sim: ModelSimulator;
beforeAll(async () => {
  sim = await startModelSimulator();
});
afterAll(() => sim.close());

const providers: [string, (maxRetries: number) => BaseChatModel][] = [
  ['OpenAI Chat Completions', (maxRetries) => new ChatOpenAI({ model: 'sim', apiKey: 'test', maxRetries, configuration: { baseURL: `${sim.url}/v1` } })],
  ['Anthropic Messages', (maxRetries) => new ChatAnthropic({ model: 'sim', apiKey: 'test', maxRetries, anthropicApiUrl: sim.url })],
];

const textOf = (message: BaseMessage) =>
  typeof message.content === 'string' ? message.content : message.content.map((part) => ('text' in part ? String(part.text) : '')).join('');

describe.each(providers)('model simulator, %s: failures on the wire', (_name, client) => {
  const model = (turns: TurnInput[], maxRetries = 0) => {
    sim.reset();
    sim.setScript({ turns });
    return client(maxRetries);
  };

  it('retries a 429 after its retry-after and then succeeds', async () => {
    const chat = model([{ kind: 'rate_limit', retryAfterSeconds: 1 }, { kind: 'text', text: 'after the wait' }], 2);
    const started = Date.now();
    const reply = await chat.invoke('hi');
    expect(reply.content).toBe('after the wait');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(sim.requests().map((request) => request.turn)).toEqual([0, 1]);
  });

  it('fails with the 500 once the retries are used up', async () => {
    const chat = model([{ kind: 'server_error' }, { kind: 'server_error' }, { kind: 'text', text: 'never reached' }], 1);
    await expect(chat.invoke('hi')).rejects.toMatchObject({ status: 500 });
    expect(sim.requests()).toHaveLength(2);
  });

  it('errors the stream when the connection drops mid-reply, after the partial text', async () => {
    const chat = model([{ kind: 'drop', text: 'Partial answer', chunks: 2 }]);
    const received: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of await chat.stream('hi')) received.push(textOf(chunk));
      })(),
    ).rejects.toThrow();
    expect(received.join('')).toBe('Partial answer');
  });
});
