import type { CallbackManagerForLLMRun } from '@langchain/core/callbacks/manager';
import { BaseChatModel, type BaseChatModelParams, type BindToolsInput } from '@langchain/core/language_models/chat_models';
import { AIMessageChunk, type AIMessage, type BaseMessage } from '@langchain/core/messages';
import { ChatGenerationChunk, type ChatResult } from '@langchain/core/outputs';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';
import { setTimeout as sleep } from 'node:timers/promises';
import { estimatedUsage } from './estimated-usage.js';

/** A tool as the scripted model sees it once bound: its name, description and JSON schema. */
export type ScriptedTool = { name: string; description: string; parameters: JsonSchema };

export type JsonSchema = {
  type?: string | string[];
  description?: string;
  format?: string;
  enum?: unknown[];
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
};

/** Decides the next message from the conversation and the bound tools; deterministic but for tool call ids. */
export type ScriptedPolicy = (messages: BaseMessage[], tools: readonly ScriptedTool[]) => AIMessage;

export type ScriptedChatModelOptions = BaseChatModelParams & {
  /** Pause before each streamed chunk after the first, so a client sees tokens arrive over time (0: none). */
  streamDelayMs?: number;
};

const toScriptedTool = (input: BindToolsInput): ScriptedTool => {
  const { function: fn } = convertToOpenAITool(input as Parameters<typeof convertToOpenAITool>[0]);
  return { name: fn.name, description: fn.description ?? '', parameters: (fn.parameters ?? {}) as JsonSchema };
};

/** Fragments of a tool call's JSON arguments: a real model streams them in pieces of a few characters. */
export const ARGS_FRAGMENT_LENGTH = 8;

/** Word by word, each word keeping the spaces before it, so the pieces concatenate to the text exactly. */
export const textPieces = (text: string): string[] => text.match(/\s*\S+|\s+$/g) ?? [];

const argsPieces = (json: string): string[] => {
  const pieces: string[] = [];
  for (let at = 0; at < json.length; at += ARGS_FRAGMENT_LENGTH) pieces.push(json.slice(at, at + ARGS_FRAGMENT_LENGTH));
  return pieces;
};

/**
 * The chunks a streaming provider would send for a message: its text word by word, then each tool call as
 * tool_call_chunks (the first with its id and name, all with the call's index), the arguments in fragments.
 * Concatenated (as LangChain does) they are the message again.
 */
export const streamedChunks = (message: AIMessage): AIMessageChunk[] => {
  const text = typeof message.content === 'string' ? message.content : '';
  const chunks = textPieces(text).map((piece) => new AIMessageChunk({ content: piece }));
  (message.tool_calls ?? []).forEach((call, index) => {
    argsPieces(JSON.stringify(call.args ?? {})).forEach((args, piece) => {
      chunks.push(
        new AIMessageChunk({
          content: '',
          tool_call_chunks: [{ type: 'tool_call_chunk', index, args, ...(piece === 0 ? { id: call.id, name: call.name } : {}) }],
        }),
      );
    });
  });
  return chunks.length > 0 ? chunks : [new AIMessageChunk({ content: '' })];
};

// An offline, deterministic chat model (ecosystem 3.1), so the whole system runs with no API key. It is a
// real BaseChatModel: createAgent binds tools to it and streams it like any other model, token by token.
export class ScriptedChatModel extends BaseChatModel {
  private boundTools: readonly ScriptedTool[] = [];
  private readonly streamDelayMs: number;

  constructor(
    private readonly policy: ScriptedPolicy,
    fields: ScriptedChatModelOptions = {},
  ) {
    super(fields);
    this.streamDelayMs = fields.streamDelayMs ?? 0;
  }

  _llmType(): string {
    return 'scripted';
  }

  get tools(): readonly ScriptedTool[] {
    return this.boundTools;
  }

  override bindTools(tools: BindToolsInput[]): this {
    const bound = new ScriptedChatModel(this.policy, { streamDelayMs: this.streamDelayMs }) as this;
    bound.boundTools = tools.map(toScriptedTool);
    return bound;
  }

  /** The policy's reply with its usage estimated (it runs no model, so it counts like one), for the budgets to count. */
  private reply(messages: BaseMessage[]): { message: AIMessage; usage: NonNullable<AIMessage['usage_metadata']> } {
    const message = this.policy(messages, this.boundTools);
    const { inputTokens, outputTokens } = estimatedUsage(messages, message);
    return { message, usage: { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens } };
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const { message, usage } = this.reply(messages);
    message.usage_metadata = usage;
    return { generations: [{ message, text: typeof message.content === 'string' ? message.content : '' }] };
  }

  override async *_streamResponseChunks(
    messages: BaseMessage[],
    options: this['ParsedCallOptions'],
    runManager?: CallbackManagerForLLMRun,
  ): AsyncGenerator<ChatGenerationChunk> {
    const { message: reply, usage } = this.reply(messages);
    const chunks = streamedChunks(reply);
    // As a streaming provider reports it: once, on the last chunk (LangChain adds the chunks' usage up).
    const last = chunks.at(-1);
    if (last) last.usage_metadata = usage;
    for (const [index, message] of chunks.entries()) {
      // The signal is the run's: a cancelled or timed-out step stops the stream between chunks.
      if (index > 0 && this.streamDelayMs > 0) await sleep(this.streamDelayMs, undefined, { signal: options.signal });
      options.signal?.throwIfAborted();
      const text = typeof message.content === 'string' ? message.content : '';
      const chunk = new ChatGenerationChunk({ message, text });
      yield chunk;
      await runManager?.handleLLMNewToken(text, undefined, undefined, undefined, undefined, { chunk });
    }
  }
}
