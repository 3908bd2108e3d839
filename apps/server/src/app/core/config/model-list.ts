/**
 * Which language models may see a school's data, as a platform default (AGENT_MODELS_ALLOWED) or a school's own choice
 * states it: every model (`*`), or a list of entries, each a provider (`openai`, every model of it) or one model of a
 * provider (`openai:gpt-4.1`, as AGENT_MODEL names it). An empty list allows none but the scripted and self-hosted
 * models, which are always allowed (the rule itself is the model policy's; this is only the syntax).
 */
export type ModelList = '*' | readonly string[];

/** The syntax of one stored or configured list, as the sentence of a refusal says it. */
export const MODEL_LIST_SYNTAX = '"*" (every model), "none", or a comma-separated list of "provider" or "provider:model" entries (e.g. "openai,anthropic:claude-sonnet-4-5")';

// A provider is a plain name; a model name starts with a letter or digit and may hold dots, slashes and colons (ollama's
// "llama3.1:8b") but no spaces or commas.
const ENTRY = /^([A-Za-z][A-Za-z0-9_-]{0,49})(?::([A-Za-z0-9][^\s,]{0,199}))?$/;

/** One entry with its provider lower-cased (providers are case-insensitive, model names are not); null when malformed. */
export const normaliseModelEntry = (entry: string): string | null => {
  const match = ENTRY.exec(entry.trim());
  if (!match) return null;
  const [, provider, model] = match;
  return model === undefined ? provider.toLowerCase() : `${provider.toLowerCase()}:${model}`;
};

/** At most this many entries: a list longer than any real choice is a mistake, and every claim reads it. */
export const MODEL_LIST_LIMIT = 50;

/** A list of entries as a school's choice stores it: `*` alone is every model; duplicates collapse. */
export const parseModelEntries = (entries: readonly string[]): { ok: true; list: ModelList } | { ok: false; reason: string } => {
  if (entries.length === 1 && entries[0].trim() === '*') return { ok: true, list: '*' };
  if (entries.length > MODEL_LIST_LIMIT) return { ok: false, reason: `at most ${MODEL_LIST_LIMIT} entries` };
  const list: string[] = [];
  for (const entry of entries) {
    const normalised = normaliseModelEntry(entry);
    if (!normalised) return { ok: false, reason: `"${entry.slice(0, 60)}" is not "provider" or "provider:model"${entry.trim() === '*' ? ' ("*" stands alone)' : ''}` };
    if (!list.includes(normalised)) list.push(normalised);
  }
  return { ok: true, list };
};

/** AGENT_MODELS_ALLOWED's value: `*`, `none`, or comma-separated entries. */
export const parseModelListSetting = (value: string): { ok: true; list: ModelList } | { ok: false; reason: string } => {
  const trimmed = value.trim();
  if (trimmed.toLowerCase() === 'none') return { ok: true, list: [] };
  if (trimmed === '') return { ok: false, reason: `must be ${MODEL_LIST_SYNTAX}; it is empty` };
  const parsed = parseModelEntries(trimmed.split(','));
  return parsed.ok ? parsed : { ok: false, reason: `must be ${MODEL_LIST_SYNTAX}; ${parsed.reason}` };
};
