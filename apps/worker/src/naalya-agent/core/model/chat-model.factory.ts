import type { AgentModelIdentity, AgentSpeaker } from '@naalya/agent-tools';
import type { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { initChatModel } from 'langchain';
import { ScriptedChatModel } from './scripted-chat-model.js';
import { scriptedPolicy } from './scripted-policy.js';

export const SCRIPTED_MODEL = 'scripted';

type ProviderEntry = {
  package: string;
  keyVariable?: string;
  /** The constructor fields that point the provider's client at AGENT_MODEL_BASE_URL; absent: no other server is supported. */
  baseUrlFields?: (baseUrl: string) => Record<string, unknown>;
  /** The constructor fields that bound one request of the provider's client in time. */
  timeoutFields?: (timeoutMs: number) => Record<string, unknown>;
};

/** The providers AGENT_MODEL may name: the package initChatModel loads, and the variable holding the key. */
export const CHAT_MODEL_PROVIDERS: Record<string, ProviderEntry> = {
  openai: {
    package: '@langchain/openai',
    keyVariable: 'OPENAI_API_KEY',
    baseUrlFields: (baseURL) => ({ configuration: { baseURL } }),
    timeoutFields: (timeout) => ({ timeout }),
  },
  anthropic: {
    package: '@langchain/anthropic',
    keyVariable: 'ANTHROPIC_API_KEY',
    baseUrlFields: (anthropicApiUrl) => ({ anthropicApiUrl }),
    timeoutFields: (timeout) => ({ clientOptions: { timeout } }),
  },
  'google-genai': { package: '@langchain/google-genai', keyVariable: 'GOOGLE_API_KEY' },
  mistralai: { package: '@langchain/mistralai', keyVariable: 'MISTRAL_API_KEY' },
  groq: { package: '@langchain/groq', keyVariable: 'GROQ_API_KEY' },
  ollama: { package: '@langchain/ollama' },
};

export type ChatModelSettings = {
  /** "scripted" or "provider:model". */
  agentModel: string;
  /** Provider keys by variable name, as the worker config read them; absent keys are undefined. */
  providerKeys: Readonly<Record<string, string | undefined>>;
  /** AGENT_MODEL_BASE_URL: the provider's API at another server; undefined for the provider's own. */
  baseUrl?: string;
  /** The scripted model's pause between streamed chunks (AGENT_SCRIPTED_STREAM_DELAY_MS); 0 when absent. */
  scriptedStreamDelayMs?: number;
  /** AGENT_MODEL_MAX_RETRIES and AGENT_MODEL_TIMEOUT_MS; the defaults below when absent. */
  modelRequests?: { maxRetries: number; timeoutMs: number };
};

/** As the worker config defaults them: two retries, a minute per request. */
export const MODEL_REQUEST_DEFAULTS = { maxRetries: 2, timeoutMs: 60_000 } as const;

export class ChatModelUnavailableError extends Error {
  override readonly name = 'ChatModelUnavailableError';
}

const splitSpec = (agentModel: string) => {
  const index = agentModel.indexOf(':');
  return { provider: agentModel.slice(0, index), model: agentModel.slice(index + 1) };
};

type PackageImporter = (name: string) => Promise<unknown>;

// Dynamic on purpose: a provider package is optional and only the chosen one must be installed.
const importPackage: PackageImporter = (name) => import(name);

/**
 * Checked once at start-up, so a missing provider package or key stops the worker with one clear line
 * instead of failing the first run. The scripted model needs nothing.
 */
export const assertChatModelAvailable = async (settings: ChatModelSettings, importer: PackageImporter = importPackage): Promise<void> => {
  if (settings.agentModel === SCRIPTED_MODEL) return;
  const { provider } = splitSpec(settings.agentModel);
  const entry = CHAT_MODEL_PROVIDERS[provider];
  if (!entry) {
    throw new ChatModelUnavailableError(
      `AGENT_MODEL=${settings.agentModel}: unknown provider "${provider}"; use "scripted" or one of ${Object.keys(CHAT_MODEL_PROVIDERS).join(', ')}.`,
    );
  }
  if (settings.baseUrl && !entry.baseUrlFields) {
    throw new ChatModelUnavailableError(
      `AGENT_MODEL_BASE_URL works with ${Object.keys(CHAT_MODEL_PROVIDERS).filter((name) => CHAT_MODEL_PROVIDERS[name]?.baseUrlFields).join(' and ')} (an OpenAI-compatible server is "openai:<model>"), not with "${provider}".`,
    );
  }
  // A server of one's own often takes no key; the provider's cloud always does.
  if (entry.keyVariable && !settings.baseUrl && !settings.providerKeys[entry.keyVariable]) {
    throw new ChatModelUnavailableError(`AGENT_MODEL=${settings.agentModel} needs ${entry.keyVariable} in the worker's environment.`);
  }
  try {
    await importer(entry.package);
  } catch {
    throw new ChatModelUnavailableError(`AGENT_MODEL=${settings.agentModel} needs the ${entry.package} package: run npm install ${entry.package}`);
  }
};

/**
 * A fresh model for one speaker of one run step; nothing is created at import time. The scripted model is
 * offline and deterministic; a provider model goes through initChatModel with the key from the config.
 */
export const createChatModel = async (settings: ChatModelSettings, _speaker: AgentSpeaker): Promise<BaseChatModel> => {
  if (settings.agentModel === SCRIPTED_MODEL) return new ScriptedChatModel(scriptedPolicy, { streamDelayMs: settings.scriptedStreamDelayMs ?? 0 });
  const { provider, model } = splitSpec(settings.agentModel);
  const entry = CHAT_MODEL_PROVIDERS[provider];
  const key = entry?.keyVariable ? settings.providerKeys[entry.keyVariable] : undefined;
  // The provider clients refuse to start without a key even when the server needs none.
  const apiKey = key ?? (settings.baseUrl ? SELF_HOSTED_PLACEHOLDER_KEY : undefined);
  const baseUrlFields = settings.baseUrl && entry?.baseUrlFields ? entry.baseUrlFields(settings.baseUrl) : {};
  // The provider packages retry through LangChain's caller (which honours retry-after; their SDKs' own retries are off),
  // so maxRetries bounds them all; the timeout is each SDK's own, per request.
  const { maxRetries, timeoutMs } = settings.modelRequests ?? MODEL_REQUEST_DEFAULTS;
  const timeoutFields = entry?.timeoutFields?.(timeoutMs) ?? {};
  return initChatModel(model, { modelProvider: provider, temperature: 0, maxRetries, ...timeoutFields, ...(apiKey ? { apiKey } : {}), ...baseUrlFields });
};

const SELF_HOSTED_PLACEHOLDER_KEY = 'not-needed';

/**
 * The model this worker sends a run's data to, as it names itself on every claim: the server checks it against the
 * school's data choice. A model reached at AGENT_MODEL_BASE_URL is self-hosted; the scripted one sends nothing anywhere.
 */
export const modelIdentity = (settings: Pick<ChatModelSettings, 'agentModel' | 'baseUrl'>): AgentModelIdentity => ({
  model: settings.agentModel,
  selfHosted: settings.agentModel === SCRIPTED_MODEL || settings.baseUrl !== undefined,
});
