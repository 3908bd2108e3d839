import { describe, expect, it } from 'vitest';
import { parseModelEntries } from '../../core/config/model-list.js';
import { effectiveModelList, isModelAllowed } from './model-access.js';

const hosted = (model: string) => ({ model, selfHosted: false });

describe('a school data choice (isModelAllowed)', () => {
  it('"*" allows every model, a claim that names none included', () => {
    expect(isModelAllowed('*', hosted('openai:gpt-4.1'))).toBe(true);
    expect(isModelAllowed('*', undefined)).toBe(true);
  });

  it('a provider entry allows every model of that provider, and no other provider', () => {
    expect(isModelAllowed(['openai'], hosted('openai:gpt-4.1'))).toBe(true);
    expect(isModelAllowed(['openai'], hosted('OpenAI:gpt-4.1-mini'))).toBe(true);
    expect(isModelAllowed(['openai'], hosted('anthropic:claude-sonnet-4-5'))).toBe(false);
  });

  it('a provider:model entry allows that model alone', () => {
    expect(isModelAllowed(['anthropic:claude-sonnet-4-5'], hosted('anthropic:claude-sonnet-4-5'))).toBe(true);
    expect(isModelAllowed(['anthropic:claude-sonnet-4-5'], hosted('anthropic:claude-opus-4'))).toBe(false);
    // A model name that itself holds a colon (ollama's tags) is matched whole.
    expect(isModelAllowed(['ollama:llama3.1:8b'], hosted('ollama:llama3.1:8b'))).toBe(true);
    expect(isModelAllowed(['ollama:llama3.1'], hosted('ollama:llama3.1:8b'))).toBe(false);
  });

  it('"none" (an empty list) allows no hosted model', () => {
    expect(isModelAllowed([], hosted('openai:gpt-4.1'))).toBe(false);
  });

  it('the scripted model and a self-hosted model are always allowed, even by "none"', () => {
    expect(isModelAllowed([], hosted('scripted'))).toBe(true);
    expect(isModelAllowed([], { model: 'openai:gpt-4.1', selfHosted: true })).toBe(true);
  });

  it('a claim that names no model, or a name that is not provider:model, counts as an unknown hosted model', () => {
    expect(isModelAllowed(['openai'], undefined)).toBe(false);
    expect(isModelAllowed(['openai'], hosted('openai'))).toBe(false);
    expect(isModelAllowed(['openai'], hosted('gpt 4'))).toBe(false);
  });
});

describe('effectiveModelList', () => {
  it("a school's choice overrides the platform default, which applies while the school has none", () => {
    expect(effectiveModelList(null, ['openai'])).toEqual(['openai']);
    expect(effectiveModelList([], '*')).toEqual([]);
    expect(effectiveModelList(['*'], [])).toBe('*');
  });
});

describe('parseModelEntries (a stored choice)', () => {
  it('normalises providers, keeps model names as written and drops duplicates', () => {
    expect(parseModelEntries(['OpenAI', 'openai', 'anthropic:Claude-X'])).toEqual({ ok: true, list: ['openai', 'anthropic:Claude-X'] });
    expect(parseModelEntries(['*'])).toEqual({ ok: true, list: '*' });
    expect(parseModelEntries([])).toEqual({ ok: true, list: [] });
  });

  it('refuses "*" beside other entries and anything that is not provider or provider:model', () => {
    expect(parseModelEntries(['*', 'openai'])).toMatchObject({ ok: false, reason: expect.stringContaining('"*" stands alone') });
    for (const entry of ['', 'open ai', 'openai:', ':gpt', 'https://models.example/v1']) {
      expect(parseModelEntries([entry]).ok).toBe(false);
    }
  });
});
