import { AIMessage, HumanMessage, SystemMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import type { ResponderRequest, TurnInput } from '@naalya/model-simulator';
import type { ScriptedTool } from '@naalya/worker/testing';

/**
 * A provider request as LangChain messages and bound tools, and a LangChain reply as a simulator turn: what lets a
 * policy written against LangChain (the worker's scripted model) answer over the OpenAI or Anthropic wire.
 */

type Json = Record<string, unknown>;

const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A content field as plain text: a string, or the text of its text blocks (OpenAI parts and Anthropic blocks alike). */
const textOf = (content: unknown): string => {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((block) => (isRecord(block) && block['type'] === 'text' && typeof block['text'] === 'string' ? block['text'] : '')).join('');
};

const parseArguments = (text: unknown): Record<string, unknown> => {
  if (typeof text !== 'string' || text.trim() === '') return {};
  const parsed: unknown = JSON.parse(text);
  return isRecord(parsed) ? parsed : {};
};

const openAiMessage = (message: Json): BaseMessage[] => {
  switch (message['role']) {
    case 'system':
    case 'developer':
      return [new SystemMessage(textOf(message['content']))];
    case 'user':
      return [new HumanMessage(textOf(message['content']))];
    case 'assistant': {
      const calls = Array.isArray(message['tool_calls']) ? message['tool_calls'].filter(isRecord) : [];
      return [
        new AIMessage({
          content: textOf(message['content']),
          tool_calls: calls.map((call) => {
            const fn = isRecord(call['function']) ? call['function'] : {};
            return { id: String(call['id']), name: String(fn['name']), args: parseArguments(fn['arguments']), type: 'tool_call' as const };
          }),
        }),
      ];
    }
    case 'tool':
      return [new ToolMessage({ content: textOf(message['content']), tool_call_id: String(message['tool_call_id']) })];
    default:
      return [];
  }
};

// Anthropic sends tool results as blocks of a user message, beside any text the user wrote: each block keeps its place.
const anthropicUserBlocks = (content: unknown): BaseMessage[] => {
  if (!Array.isArray(content)) return [new HumanMessage(textOf(content))];
  const messages: BaseMessage[] = [];
  let text: string[] = [];
  const flushText = () => {
    if (text.length > 0) messages.push(new HumanMessage(text.join('')));
    text = [];
  };
  for (const block of content.filter(isRecord)) {
    if (block['type'] === 'tool_result') {
      flushText();
      messages.push(new ToolMessage({ content: textOf(block['content']), tool_call_id: String(block['tool_use_id']) }));
    } else if (block['type'] === 'text' && typeof block['text'] === 'string') {
      text.push(block['text']);
    }
  }
  flushText();
  return messages;
};

const anthropicMessage = (message: Json): BaseMessage[] => {
  if (message['role'] === 'user') return anthropicUserBlocks(message['content']);
  if (message['role'] !== 'assistant') return [];
  const blocks = Array.isArray(message['content']) ? message['content'].filter(isRecord) : [];
  const calls = blocks.filter((block) => block['type'] === 'tool_use');
  return [
    new AIMessage({
      content: textOf(message['content']),
      tool_calls: calls.map((call) => ({ id: String(call['id']), name: String(call['name']), args: isRecord(call['input']) ? call['input'] : {}, type: 'tool_call' as const })),
    }),
  ];
};

const openAiTool = (tool: Json): ScriptedTool[] => {
  const fn = isRecord(tool['function']) ? tool['function'] : undefined;
  if (!fn || typeof fn['name'] !== 'string') return [];
  return [{ name: fn['name'], description: typeof fn['description'] === 'string' ? fn['description'] : '', parameters: (isRecord(fn['parameters']) ? fn['parameters'] : {}) as ScriptedTool['parameters'] }];
};

const anthropicTool = (tool: Json): ScriptedTool[] =>
  typeof tool['name'] === 'string'
    ? [{ name: tool['name'], description: typeof tool['description'] === 'string' ? tool['description'] : '', parameters: (isRecord(tool['input_schema']) ? tool['input_schema'] : {}) as ScriptedTool['parameters'] }]
    : [];

/** The conversation and the bound tools of a request, as the model under LangChain would have received them. */
export const toLangChain = (request: ResponderRequest): { messages: BaseMessage[]; tools: ScriptedTool[] } => {
  const records = request.messages.filter(isRecord);
  const tools = request.tools.filter(isRecord);
  if (request.api === 'openai') return { messages: records.flatMap(openAiMessage), tools: tools.flatMap(openAiTool) };
  const system = textOf(request.system);
  return {
    messages: [...(system ? [new SystemMessage(system)] : []), ...records.flatMap(anthropicMessage)],
    tools: tools.flatMap(anthropicTool),
  };
};

/** A LangChain reply as the simulator's turn: its tool calls (parallel ones together), or its text. */
export const toTurn = (message: AIMessage): TurnInput => {
  const calls = message.tool_calls ?? [];
  if (calls.length > 0) {
    return { kind: 'tool_calls', calls: calls.map((call) => ({ ...(call.id ? { id: call.id } : {}), name: call.name, arguments: call.args })) };
  }
  return { kind: 'text', text: textOf(message.content) };
};
