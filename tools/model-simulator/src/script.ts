import { z } from 'zod';

/**
 * The script format: what the simulated model answers, one turn per model request, in order. This file knows
 * nothing of HTTP or of either provider's wire format; `openai.ts` and `anthropic.ts` render a turn, `server.ts` serves it.
 */

/** Every wait the simulator makes is bounded, so a script can never hang a test run for long. */
export const MAX_DELAY_MS = 30_000;

const tokens = z.number().int().nonnegative().max(10_000_000);

/** Token counts reported in the reply; when left out, estimated from the request and reply sizes (about 4 chars a token). */
const Usage = z.strictObject({ inputTokens: tokens.optional(), outputTokens: tokens.optional() });

/** Fields every answering turn may carry. `delayMs` holds back the first token (a slow model); `chunks` is how many pieces streamed text or arguments arrive in. */
const answerFields = {
  usage: Usage.optional(),
  delayMs: z.number().int().nonnegative().max(MAX_DELAY_MS).optional(),
  chunks: z.number().int().min(1).max(1000).optional(),
};

const ToolCall = z.strictObject({
  /** Generated when left out (`call_sim_<n>` / `toolu_sim_<n>`). */
  id: z.string().min(1).max(200).optional(),
  name: z.string().min(1).max(200),
  arguments: z.record(z.string(), z.unknown()),
});

export const Turn = z.discriminatedUnion('kind', [
  /** Plain text, streamed in `chunks` pieces. */
  z.strictObject({ kind: z.literal('text'), text: z.string().max(1_000_000), ...answerFields }),
  /** One or several (parallel) tool calls; each call's JSON arguments stream in `chunks` fragments. */
  z.strictObject({ kind: z.literal('tool_calls'), calls: z.array(ToolCall).min(1).max(64), ...answerFields }),
  /** A tool call whose arguments are not valid JSON: the raw text is sent as the arguments. */
  z.strictObject({
    kind: z.literal('malformed_tool_call'),
    name: z.string().min(1).max(200),
    rawArguments: z.string().max(1_000_000).default('{"query": "unterminated'),
    ...answerFields,
  }),
  /** A call to a tool the request did not offer (the simulator refuses the turn if the request did offer it). */
  z.strictObject({
    kind: z.literal('unknown_tool'),
    name: z.string().min(1).max(200).default('tool_not_offered'),
    arguments: z.record(z.string(), z.unknown()).default({}),
    ...answerFields,
  }),
  /** The model declines: OpenAI's `refusal` field, Anthropic's `stop_reason: "refusal"`. */
  z.strictObject({ kind: z.literal('refusal'), text: z.string().max(100_000).default('I can’t help with that.'), ...answerFields }),
  /** HTTP 429 with a `retry-after` header (seconds). */
  z.strictObject({ kind: z.literal('rate_limit'), retryAfterSeconds: z.number().int().nonnegative().max(60).default(1) }),
  /** An HTTP 5xx error reply. */
  z.strictObject({ kind: z.literal('server_error'), status: z.number().int().min(500).max(599).default(500), message: z.string().max(10_000).default('simulated server error') }),
  /**
   * The connection is cut mid-reply: a streaming request gets its headers and `text` in `chunks` pieces, then the
   * socket is destroyed; a non-streaming request is cut before any byte.
   */
  z.strictObject({ kind: z.literal('drop'), text: z.string().max(100_000).default('Partial ans'), chunks: answerFields.chunks }),
]);

export const Script = z.strictObject({ turns: z.array(Turn).max(10_000) });

export type Turn = z.output<typeof Turn>;
export type TurnInput = z.input<typeof Turn>;
export type Script = z.output<typeof Script>;
export type ScriptInput = z.input<typeof Script>;

export class ScriptError extends Error {}

/** Parses a script; a bad one throws a ScriptError whose message lists every problem by path. */
export function parseScript(input: unknown): Script {
  const result = Script.safeParse(input);
  if (!result.success) throw new ScriptError(`invalid model simulator script:\n${z.prettifyError(result.error)}`);
  return result.data;
}

/** Parses one turn (a responder's answer); a bad one throws a ScriptError whose message lists every problem by path. */
export function parseTurn(input: unknown): Turn {
  const result = Turn.safeParse(input);
  if (!result.success) throw new ScriptError(`invalid model simulator turn:\n${z.prettifyError(result.error)}`);
  return result.data;
}

/** What a successful turn says, reduced to what both wire formats need. */
export type Reply =
  | { kind: 'text'; text: string }
  | { kind: 'refusal'; text: string }
  | { kind: 'tool_calls'; calls: { id: string | undefined; name: string; argumentsJson: string }[] };

export function replyOf(turn: Extract<Turn, { kind: 'text' | 'tool_calls' | 'malformed_tool_call' | 'unknown_tool' | 'refusal' }>): Reply {
  switch (turn.kind) {
    case 'text':
    case 'refusal':
      return { kind: turn.kind, text: turn.text };
    case 'tool_calls':
      return { kind: 'tool_calls', calls: turn.calls.map((call) => ({ id: call.id, name: call.name, argumentsJson: JSON.stringify(call.arguments) })) };
    case 'malformed_tool_call':
      return { kind: 'tool_calls', calls: [{ id: undefined, name: turn.name, argumentsJson: turn.rawArguments }] };
    case 'unknown_tool':
      return { kind: 'tool_calls', calls: [{ id: undefined, name: turn.name, argumentsJson: JSON.stringify(turn.arguments) }] };
  }
}

/** Splits text into `count` nearly equal, non-empty pieces (fewer if the text is shorter); the pieces join back to the text. */
export function splitInto(text: string, count: number): string[] {
  const chars = Array.from(text);
  const n = Math.max(1, Math.min(count, chars.length));
  const size = Math.ceil(chars.length / n);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(''));
  return pieces.length ? pieces : [''];
}

export const DEFAULT_CHUNKS = 3;

/** Estimated tokens: about four characters a token, at least one. */
export const estimateTokens = (chars: number): number => Math.max(1, Math.ceil(chars / 4));
