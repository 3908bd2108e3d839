import { BaseChatModel, type BaseChatModelParams, type BindToolsInput } from '@langchain/core/language_models/chat_models';
import type { AIMessage, BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { convertToOpenAITool } from '@langchain/core/utils/function_calling';

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

const toScriptedTool = (input: BindToolsInput): ScriptedTool => {
  const { function: fn } = convertToOpenAITool(input as Parameters<typeof convertToOpenAITool>[0]);
  return { name: fn.name, description: fn.description ?? '', parameters: (fn.parameters ?? {}) as JsonSchema };
};

// An offline, deterministic chat model (ecosystem 3.1), so the whole system runs with no API key. It is a
// real BaseChatModel: createAgent binds tools to it and streams it like any other model.
export class ScriptedChatModel extends BaseChatModel {
  private boundTools: readonly ScriptedTool[] = [];

  constructor(
    private readonly policy: ScriptedPolicy,
    fields: BaseChatModelParams = {},
  ) {
    super(fields);
  }

  _llmType(): string {
    return 'scripted';
  }

  get tools(): readonly ScriptedTool[] {
    return this.boundTools;
  }

  override bindTools(tools: BindToolsInput[]): this {
    const bound = new ScriptedChatModel(this.policy) as this;
    bound.boundTools = tools.map(toScriptedTool);
    return bound;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const message = this.policy(messages, this.boundTools);
    return { generations: [{ message, text: typeof message.content === 'string' ? message.content : '' }] };
  }
}
