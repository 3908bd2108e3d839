import { startModelSimulator } from '@naalya/model-simulator';
import { describe, expect, it } from 'vitest';
import { ChatModelUnavailableError, assertChatModelAvailable, createChatModel, modelIdentity } from './chat-model.factory.js';
import { ScriptedChatModel } from './scripted-chat-model.js';

const NO_KEYS = {};
const installed = async () => ({});
const missing = async () => {
  throw new Error('Cannot find package');
};

const refusal = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ChatModelUnavailableError) return error.message;
    throw error;
  }
  throw new Error('expected a refusal');
};

describe('chat model factory', () => {
  it('"scripted" (the default) makes a fresh offline ScriptedChatModel per call, with nothing to check', async () => {
    await expect(assertChatModelAvailable({ agentModel: 'scripted', providerKeys: NO_KEYS }, missing)).resolves.toBeUndefined();
    const first = await createChatModel({ agentModel: 'scripted', providerKeys: NO_KEYS }, 'rover');
    const second = await createChatModel({ agentModel: 'scripted', providerKeys: NO_KEYS }, 'rover');
    expect(first).toBeInstanceOf(ScriptedChatModel);
    expect(first).not.toBe(second);
  });

  it('a provider without its key stops start-up with one line naming the variable', async () => {
    const message = await refusal(assertChatModelAvailable({ agentModel: 'openai:gpt-4.1', providerKeys: NO_KEYS }, installed));
    expect(message).toBe('AGENT_MODEL=openai:gpt-4.1 needs OPENAI_API_KEY in the worker\'s environment.');
    expect(message).not.toContain('\n');
    expect(await refusal(assertChatModelAvailable({ agentModel: 'anthropic:claude-sonnet-4-5', providerKeys: NO_KEYS }, installed))).toContain(
      'ANTHROPIC_API_KEY',
    );
  });

  it('a provider whose package is not installed says which package to install', async () => {
    const message = await refusal(assertChatModelAvailable({ agentModel: 'openai:gpt-4.1', providerKeys: { OPENAI_API_KEY: 'sk-test' } }, missing));
    expect(message).toBe('AGENT_MODEL=openai:gpt-4.1 needs the @langchain/openai package: run npm install @langchain/openai');
  });

  it('ollama needs no key, only its package (not installed here)', async () => {
    await expect(assertChatModelAvailable({ agentModel: 'ollama:llama3.1', providerKeys: NO_KEYS }, installed)).resolves.toBeUndefined();
    expect(await refusal(assertChatModelAvailable({ agentModel: 'ollama:llama3.1', providerKeys: NO_KEYS }))).toContain('npm install @langchain/ollama');
  });

  it('an unknown provider is named', async () => {
    expect(await refusal(assertChatModelAvailable({ agentModel: 'acme:m1', providerKeys: NO_KEYS }, installed))).toContain('unknown provider "acme"');
  });

  it('AGENT_MODEL_BASE_URL needs no key: a self-hosted OpenAI-compatible server often takes none', async () => {
    const settings = { agentModel: 'openai:llama-3.1-8b', providerKeys: NO_KEYS, baseUrl: 'http://127.0.0.1:8000/v1' };
    await expect(assertChatModelAvailable(settings, installed)).resolves.toBeUndefined();
    const model = (await createChatModel(settings, 'rover')) as unknown as { _defaultConfig?: Record<string, unknown> };
    expect(model._defaultConfig).toMatchObject({ configuration: { baseURL: 'http://127.0.0.1:8000/v1' }, modelProvider: 'openai' });
  });

  it('AGENT_MODEL_BASE_URL reaches Anthropic through its own field', async () => {
    const model = (await createChatModel({ agentModel: 'anthropic:claude-x', providerKeys: NO_KEYS, baseUrl: 'http://127.0.0.1:9000' }, 'rover')) as unknown as {
      _defaultConfig?: Record<string, unknown>;
    };
    expect(model._defaultConfig).toMatchObject({ anthropicApiUrl: 'http://127.0.0.1:9000' });
  });

  it('AGENT_MODEL_BASE_URL with a provider that has no other server is refused at start-up, naming what works', async () => {
    const message = await refusal(assertChatModelAvailable({ agentModel: 'groq:llama', providerKeys: { GROQ_API_KEY: 'k' }, baseUrl: 'http://127.0.0.1:1/v1' }, installed));
    expect(message).toContain('AGENT_MODEL_BASE_URL works with openai and anthropic');
  });

  it('the model a claim names: self-hosted when reached at a base URL or scripted, hosted otherwise', () => {
    expect(modelIdentity({ agentModel: 'scripted' })).toEqual({ model: 'scripted', selfHosted: true });
    expect(modelIdentity({ agentModel: 'openai:gpt-4.1' })).toEqual({ model: 'openai:gpt-4.1', selfHosted: false });
    expect(modelIdentity({ agentModel: 'openai:qwen', baseUrl: 'http://127.0.0.1:8000/v1' })).toEqual({ model: 'openai:qwen', selfHosted: true });
  });

  it('a provider model gets AGENT_MODEL_MAX_RETRIES and AGENT_MODEL_TIMEOUT_MS in its own fields', async () => {
    const modelRequests = { maxRetries: 4, timeoutMs: 12_000 };
    const configOf = async (agentModel: string) =>
      ((await createChatModel({ agentModel, providerKeys: { OPENAI_API_KEY: 'k', ANTHROPIC_API_KEY: 'k' }, modelRequests }, 'rover')) as unknown as { _defaultConfig?: Record<string, unknown> })
        ._defaultConfig;
    expect(await configOf('openai:gpt-4.1')).toMatchObject({ maxRetries: 4, timeout: 12_000 });
    expect(await configOf('anthropic:claude-x')).toMatchObject({ maxRetries: 4, clientOptions: { timeout: 12_000 } });
  });

  describe.each(['openai', 'anthropic'])('%s through the model simulator', (provider) => {
    const modelAt = async (url: string, maxRetries: number) =>
      createChatModel(
        { agentModel: `${provider}:sim`, providerKeys: NO_KEYS, baseUrl: provider === 'openai' ? `${url}/v1` : url, modelRequests: { maxRetries, timeoutMs: 5_000 } },
        'rover',
      );

    it('a 429 is asked again after its retry-after, and the reply then comes', async () => {
      const sim = await startModelSimulator({ script: { turns: [{ kind: 'rate_limit', retryAfterSeconds: 1 }, { kind: 'text', text: 'after the wait' }] } });
      try {
        const started = Date.now();
        const reply = await (await modelAt(sim.url, 2)).invoke('hi');
        expect(JSON.stringify(reply.content)).toContain('after the wait');
        expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
        expect(sim.requests()).toHaveLength(2);
      } finally {
        await sim.close();
      }
    }, 20_000);

    it('a 500 is asked again at most AGENT_MODEL_MAX_RETRIES times, then fails', async () => {
      const sim = await startModelSimulator({ script: { turns: [{ kind: 'server_error' }, { kind: 'server_error' }, { kind: 'text', text: 'never reached' }] } });
      try {
        await expect((await modelAt(sim.url, 1)).invoke('hi')).rejects.toMatchObject({ status: 500 });
        expect(sim.requests()).toHaveLength(2);
      } finally {
        await sim.close();
      }
    }, 20_000);
  });
});
