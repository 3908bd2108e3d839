import { describe, expect, it } from 'vitest';
import { ModelCallError, classifyModelError, modelCallErrorIn } from './model-errors.js';

// Stand-ins named as the openai and @anthropic-ai/sdk classes are: the classification reads names, statuses and codes.
class APIConnectionError extends Error {}
class APIConnectionTimeoutError extends Error {}
const withStatus = (status: number) => Object.assign(new Error(`${status} provider text`), { status });
const socketCut = () => new TypeError('terminated', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });

describe('classifyModelError: what a failed model call was, from status, class and cause, never from its text', () => {
  it.each([
    ['401', withStatus(401), 'MODEL_REJECTED_CREDENTIALS'],
    ['403', withStatus(403), 'MODEL_REJECTED_CREDENTIALS'],
    ['429 after the retries', withStatus(429), 'MODEL_RATE_LIMITED'],
    ['500', withStatus(500), 'MODEL_FAILED'],
    ['400 (a request the server refused)', withStatus(400), 'MODEL_FAILED'],
    ['connection refused', new APIConnectionError('Connection error.', { cause: new TypeError('fetch failed', { cause: Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }) }) }), 'MODEL_UNREACHABLE'],
    ['a stream cut mid-reply', socketCut(), 'MODEL_UNREACHABLE'],
    ['a reset connection', Object.assign(new Error('read'), { code: 'ECONNRESET' }), 'MODEL_UNREACHABLE'],
    ['a request timeout', new APIConnectionTimeoutError('Request timed out.'), 'MODEL_TIMED_OUT'],
    ['headers that never came', Object.assign(new Error('headers'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), 'MODEL_TIMED_OUT'],
    ['anything else', new Error('unexpected'), 'MODEL_FAILED'],
  ] as const)('%s is %s', (_what, error, code) => {
    expect(classifyModelError(error)).toBe(code);
  });

  it('a 401 wrapped by LangChain (in a cause) is still the credentials', () => {
    expect(classifyModelError(new Error('wrapped', { cause: withStatus(401) }))).toBe('MODEL_REJECTED_CREDENTIALS');
  });

  it('a ModelCallError is found under the errors LangChain wraps it in, and keeps the provider error as its cause only', () => {
    const provider = withStatus(500);
    const error = new ModelCallError('MODEL_FAILED', provider);
    expect(modelCallErrorIn(new Error('middleware', { cause: error }))).toBe(error);
    expect(error.cause).toBe(provider);
    expect(modelCallErrorIn(new Error('other'))).toBeUndefined();
  });
});
