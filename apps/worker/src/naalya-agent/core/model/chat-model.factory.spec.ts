import { describe, expect, it } from 'vitest';
import { ChatModelUnavailableError, assertChatModelAvailable, createChatModel } from './chat-model.factory.js';
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
});
