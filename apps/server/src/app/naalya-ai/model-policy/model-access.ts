import type { AgentModelIdentity } from '@naalya/agent-tools';
import { normaliseModelEntry, type ModelList } from '../../core/config/model-list.js';

/** The offline model: it sends nothing anywhere, so every school allows it. */
export const SCRIPTED_MODEL = 'scripted';

/**
 * Whether a school whose choice is `allowed` lets its data be sent to the model a worker names on its claim. The
 * scripted model and a self-hosted one (the worker reaches it at AGENT_MODEL_BASE_URL, a server the platform or the
 * school runs) are always allowed. A claim that names no model is an unknown hosted one: only "every model" allows it.
 * An entry `provider` allows every model of that provider, `provider:model` that model alone.
 */
export const isModelAllowed = (allowed: ModelList, model: AgentModelIdentity | undefined): boolean => {
  if (model && (model.selfHosted || model.model === SCRIPTED_MODEL)) return true;
  if (allowed === '*') return true;
  if (!model) return false;
  const named = normaliseModelEntry(model.model);
  if (!named || !named.includes(':')) return false;
  const provider = named.slice(0, named.indexOf(':'));
  return allowed.includes(provider) || allowed.includes(named);
};

/** A school's choice, or the platform's default where the school has none (NULL). */
export const effectiveModelList = (schoolChoice: readonly string[] | null, platformDefault: ModelList): ModelList => {
  if (schoolChoice === null) return platformDefault;
  return schoolChoice.length === 1 && schoolChoice[0] === '*' ? '*' : schoolChoice;
};

/** How a claim's model is named in a log line. */
export const describeModel = (model: AgentModelIdentity | undefined): string =>
  model ? `${model.model}${model.selfHosted ? ' (self-hosted)' : ''}` : 'no model named';
