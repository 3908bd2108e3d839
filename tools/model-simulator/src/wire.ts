import type { Reply } from './script.js';

/** One successful reply, ready to render: what to say, the token counts to report, and the ids to use. */
export interface ReplyPlan {
  reply: Reply;
  usage: { inputTokens: number; outputTokens: number };
  /** The model name the request asked for, echoed back as real APIs do. */
  model: string;
  /** A number unique within this simulator, for response and tool-call ids. */
  serial: number;
  chunks: number;
}

/** A streamed reply as SSE frames; frames before `contentEnd` open the reply and carry its content, the rest close it. */
export interface StreamFrames {
  frames: string[];
  contentEnd: number;
}

/** A model request as the simulator reads it. */
export interface ReadRequest {
  stream: boolean;
  model: string;
  wantsStreamUsage: boolean;
  offeredTools: string[];
  /** The conversation in the API's own shape (OpenAI's system messages included). */
  messages: unknown[];
  /** The tools offered, in the API's own shape. */
  tools: unknown[];
  /** Anthropic's separate system prompt (a string or text blocks); absent on OpenAI, whose system prompt is a message. */
  system?: unknown;
}

/** What a provider's API looks like on the wire; the server knows nothing else of either provider. */
export interface Wire {
  readonly name: 'openai' | 'anthropic';
  /** The request's `stream` flag, model, the tool names it offered and what a responder reads, leniently: the simulator is not a validator. */
  readRequest(body: unknown): ReadRequest;
  json(plan: ReplyPlan): unknown;
  stream(plan: ReplyPlan, includeUsage: boolean): StreamFrames;
  /** The body of an error reply in this API's shape. */
  error(status: number, message: string): unknown;
}

export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
