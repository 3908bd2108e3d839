import { randomUUID } from 'node:crypto';
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { isGraphBubbleUp } from '@langchain/langgraph';
import { ToolInvocationError, createMiddleware } from 'langchain';
import { modelCallErrorIn } from '../model/model-errors.js';

/**
 * What the user reads when the model declines with no words: Anthropic's `stop_reason: "refusal"` without text, or an
 * empty answer to the user's own message (OpenAI's Chat Completions sends a refusal in a field LangChain does not read,
 * so an empty reply is how a refusal arrives there).
 */
export const DECLINED_REPLY = 'The language model declined to answer this request, so nothing was done. You can rephrase it, or ask something else.';

/** The model's next input for a call whose arguments were not JSON at all: nothing was run, and how to fix it. */
export const malformedArgumentsMessage = (toolName: string): string =>
  `The arguments of this "${toolName}" call were not valid JSON, so it was not run and nothing was sent. Call it again with its arguments as one JSON object that matches the tool's schema.`;

const MAX_ISSUES_LENGTH = 600;

/**
 * The model's next input for a call whose arguments the tool's schema refused: what the schema said (zod's own
 * summary, never LangChain's message, which carries a stack trace), and that nothing was run.
 */
export const refusedArgumentsMessage = (toolName: string, error: ToolInvocationError): string => {
  const issues = error.toolError.message
    .replace(/^Received tool input did not match expected schema\s*/, '')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .join(' ')
    .slice(0, MAX_ISSUES_LENGTH);
  return `The arguments of this "${toolName}" call do not match the tool's schema, so it was not run and nothing was sent${issues ? `: ${issues}` : ''}. Call it again with arguments that match the schema.`;
};

const textOf = (content: BaseMessage['content']): string =>
  typeof content === 'string' ? content : content.map((block) => (typeof block === 'object' && block !== null && 'text' in block && typeof block.text === 'string' ? block.text : '')).join('');

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/**
 * The arguments of a tool call as the model streamed them, before LangChain parsed them: the chunks' raw text, OpenAI's
 * raw tool_calls, or Anthropic's input_json_delta blocks of the call's content block. Undefined when none is kept.
 */
const rawArgumentsOf = (reply: AIMessage, callId: string): string | undefined => {
  const chunks = (reply as AIMessage & { tool_call_chunks?: { id?: string; args?: string }[] }).tool_call_chunks;
  const chunk = chunks?.find((candidate) => candidate.id === callId);
  if (typeof chunk?.args === 'string') return chunk.args;
  const openAi = reply.additional_kwargs?.tool_calls?.find((call) => call.id === callId);
  if (typeof openAi?.function?.arguments === 'string') return openAi.function.arguments;
  if (!Array.isArray(reply.content)) return undefined;
  const block = reply.content.find((part) => isRecord(part) && part['type'] === 'tool_use' && part['id'] === callId);
  if (!isRecord(block)) return undefined;
  if (typeof block['input'] === 'string' && block['input'] !== '') return block['input'];
  const deltas = reply.content.filter((part) => isRecord(part) && part['type'] === 'input_json_delta' && part['index'] === block['index']);
  return deltas.length > 0 ? deltas.map((part) => (isRecord(part) && typeof part['input'] === 'string' ? part['input'] : '')).join('') : undefined;
};

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/**
 * The reply's calls split by whether their arguments arrived as JSON. Both provider packages repair streamed arguments
 * that were cut off (`{"name": "Scien` becomes { name: 'Scien' }), which would run a write with an argument the model
 * never finished; a call whose raw arguments are not JSON is treated as malformed, like the ones LangChain reports.
 */
const splitByArguments = (reply: AIMessage) => {
  const valid: NonNullable<AIMessage['tool_calls']> = [];
  const repaired: NonNullable<AIMessage['invalid_tool_calls']> = [];
  for (const call of reply.tool_calls ?? []) {
    const raw = call.id ? rawArgumentsOf(reply, call.id) : undefined;
    if (raw !== undefined && raw.trim() !== '' && !isJson(raw)) repaired.push({ type: 'invalid_tool_call', id: call.id, name: call.name, args: raw, error: 'Malformed args.' });
    else valid.push(call);
  }
  return { valid, invalid: [...(reply.invalid_tool_calls ?? []), ...repaired] };
};

const stopReasonOf = (reply: AIMessage): unknown => reply.response_metadata?.['stop_reason'] ?? reply.additional_kwargs?.['stop_reason'];

/**
 * The reply as the agent may act on it:
 * - a call whose arguments are not JSON (an invalid_tool_call) is made a call with no arguments, so the agent routes it
 *   to the tools node, where wrapToolCall answers it without running it: the model reads why, and the conversation stays
 *   one every provider accepts (each call answered);
 * - a refusal with no words, or no words at all in answer to the user's message, says the model declined. (No words
 *   after a tool's result is a model with nothing to add, often after a specialist has answered: left as it is.)
 */
export const answerableReply = (reply: AIMessage, sent: readonly BaseMessage[]): AIMessage => {
  const { valid, invalid } = splitByArguments(reply);
  const hasCalls = valid.length > 0 || invalid.length > 0;
  const answersUser = sent.at(-1) !== undefined && HumanMessage.isInstance(sent.at(-1));
  const declined = !hasCalls && textOf(reply.content).trim() === '' && (stopReasonOf(reply) === 'refusal' || answersUser);
  if (invalid.length === 0 && !declined) return reply;
  const invalidCalls = invalid.map((call) => ({ ...call, id: call.id ?? `invalid-${randomUUID()}` }));
  return new AIMessage({
    id: reply.id,
    name: reply.name,
    content: declined ? DECLINED_REPLY : reply.content,
    tool_calls: [...valid, ...invalidCalls.map((call) => ({ type: 'tool_call' as const, id: call.id, name: call.name ?? 'unnamed', args: {} }))],
    invalid_tool_calls: invalidCalls,
    additional_kwargs: reply.additional_kwargs,
    response_metadata: reply.response_metadata,
    usage_metadata: reply.usage_metadata,
  });
};

/** The call of this id in the last AI message's invalid_tool_calls: arguments that were not JSON. */
const isInvalidCall = (messages: readonly BaseMessage[], toolCallId: string | undefined): boolean => {
  if (!toolCallId) return false;
  const last = messages.findLast((message) => AIMessage.isInstance(message));
  return last !== undefined && AIMessage.isInstance(last) && (last.invalid_tool_calls ?? []).some((call) => call.id === toolCallId);
};

/**
 * The model is untrusted, and so is the shape of its replies: a tool call with arguments that are not JSON, or that
 * the tool's schema refuses, is answered as a tool result saying so and nothing crosses the hop; a reply with nothing
 * in it says the model declined. (A call to a tool the agent does not have is answered by LangChain's ToolNode itself,
 * naming the tools there are.)
 */
export const untrustedReplyMiddleware = () =>
  createMiddleware({
    name: 'UntrustedReplyMiddleware',
    wrapModelCall: async (request, handler) => {
      const response = await handler(request);
      return AIMessage.isInstance(response) ? answerableReply(response, request.messages) : response;
    },
    wrapToolCall: async (request, handler) => {
      const { toolCall } = request;
      const answer = (content: string) => new ToolMessage({ content, tool_call_id: toolCall.id ?? '', name: toolCall.name, status: 'error' });
      if (isInvalidCall(request.state.messages, toolCall.id)) return answer(malformedArgumentsMessage(toolCall.name));
      try {
        return await handler(request);
      } catch (error) {
        if (ToolInvocationError.isInstance(error)) return answer(refusedArgumentsMessage(toolCall.name, error));
        // Fatal to the step: an interrupt, a stopped step, a specialist's model that failed (its code is the user's).
        if (isGraphBubbleUp(error) || request.runtime.signal?.aborted || modelCallErrorIn(error)) throw error;
        // Anything else, as LangChain's ToolNode answers a tool's error (the error's own line, no stack), so the model
        // can recover: a middleware's throw would otherwise end the step.
        return answer(`${String(error)}\n Please fix your mistakes.`);
      }
    },
  });
