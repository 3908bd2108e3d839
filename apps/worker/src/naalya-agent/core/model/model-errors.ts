import type { RunErrorCode } from '@naalya/agent-tools';

/** The RUN_ERROR codes a failed model call ends its step with; their sentences are fixed in the contract. */
export type ModelErrorCode = Extract<RunErrorCode, 'MODEL_UNREACHABLE' | 'MODEL_RATE_LIMITED' | 'MODEL_REJECTED_CREDENTIALS' | 'MODEL_FAILED' | 'MODEL_TIMED_OUT'>;

/**
 * A model call that failed after the provider client's own retries. Its code is what the user is told (through the
 * contract's sentence); the provider's error is only its cause, for the log: its text may hold a key, a URL or a stack.
 */
export class ModelCallError extends Error {
  override readonly name = 'ModelCallError';
  constructor(
    readonly code: ModelErrorCode,
    cause: unknown,
  ) {
    super(`the model call failed (${code}): ${describeModelError(cause)}`, { cause });
  }
}

// Connection-level failures of Node's sockets and of undici (which fetch, and so both SDKs, run on).
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
// The SDKs' own classes (openai and @anthropic-ai/sdk name them alike); LangChain rethrows them as they are.
const TIMEOUT_CLASSES = new Set(['APIConnectionTimeoutError', 'TimeoutError']);
const CONNECTION_CLASSES = new Set(['APIConnectionError']);

const MAX_CAUSES = 8;

const causesOf = (error: unknown): unknown[] => {
  const chain: unknown[] = [];
  for (let current = error; current !== undefined && current !== null && chain.length < MAX_CAUSES; current = (current as { cause?: unknown }).cause) {
    chain.push(current);
    if (typeof current !== 'object') break;
  }
  return chain;
};

const field = (error: unknown, key: string): unknown => (typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[key] : undefined);
const className = (error: unknown): string | undefined => (typeof error === 'object' && error !== null ? error.constructor?.name : undefined);

/**
 * What a failed model call was, from the SDK error's HTTP status, class and cause chain (never its text): 401/403 the
 * credentials, 429 the rate limit (the client has already waited out its retries), any other HTTP status the model
 * server's failure; a request that timed out; a connection refused, reset or dropped mid-stream. Anything else is a
 * failure of the model call too.
 */
export const classifyModelError = (error: unknown): ModelErrorCode => {
  for (const cause of causesOf(error)) {
    const status = field(cause, 'status');
    if (typeof status === 'number' && status >= 400) {
      if (status === 401 || status === 403) return 'MODEL_REJECTED_CREDENTIALS';
      if (status === 429) return 'MODEL_RATE_LIMITED';
      return 'MODEL_FAILED';
    }
    const name = className(cause);
    const code = field(cause, 'code');
    if ((name && TIMEOUT_CLASSES.has(name)) || field(cause, 'name') === 'TimeoutError' || (typeof code === 'string' && TIMEOUT_CODES.has(code))) return 'MODEL_TIMED_OUT';
    if ((name && CONNECTION_CLASSES.has(name)) || (typeof code === 'string' && UNREACHABLE_CODES.has(code))) return 'MODEL_UNREACHABLE';
    // undici's words for a stream cut off mid-body, or a request that never connected, when no code says which.
    if (cause instanceof TypeError && /^(terminated|fetch failed)$/.test(cause.message)) return 'MODEL_UNREACHABLE';
  }
  return 'MODEL_FAILED';
};

/** For the worker's log only: the class, status and code of each error in the chain, and the first one's message. */
export const describeModelError = (error: unknown): string =>
  causesOf(error)
    .map((cause, index) => {
      const parts = [className(cause) ?? typeof cause, field(cause, 'status'), field(cause, 'code')].filter((part) => part !== undefined && part !== null);
      const message = index === 0 && cause instanceof Error ? `: ${cause.message.split('\n')[0]}` : '';
      return `${parts.join(' ')}${message}`;
    })
    .join(' <- ');

/** The ModelCallError in an error's cause chain (LangChain wraps what a middleware throws), if there is one. */
export const modelCallErrorIn = (error: unknown): ModelCallError | undefined =>
  causesOf(error).find((cause): cause is ModelCallError => cause instanceof ModelCallError);
