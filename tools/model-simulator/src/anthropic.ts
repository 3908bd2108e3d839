import { splitInto } from './script.js';
import { isRecord, type ReplyPlan, type StreamFrames, type Wire } from './wire.js';

/** The Anthropic Messages API (`POST /v1/messages`), as the `@anthropic-ai/sdk` reads it. */

const sse = (data: { type: string; [field: string]: unknown }): string => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;

const toolId = (plan: ReplyPlan, index: number, id: string | undefined) => id ?? `toolu_sim_${plan.serial}_${index}`;

const stopReason = (plan: ReplyPlan) => (plan.reply.kind === 'tool_calls' ? 'tool_use' : plan.reply.kind === 'refusal' ? 'refusal' : 'end_turn');

/** Parsed tool input for a non-streaming reply; malformed arguments cannot be an object there, so the raw text is sent. */
const inputOf = (argumentsJson: string): unknown => {
  try {
    return JSON.parse(argumentsJson);
  } catch {
    return argumentsJson;
  }
};

export const anthropicWire: Wire = {
  name: 'anthropic',

  readRequest(body) {
    const request = isRecord(body) ? body : {};
    const tools = Array.isArray(request['tools']) ? request['tools'] : [];
    return {
      stream: request['stream'] === true,
      model: typeof request['model'] === 'string' ? request['model'] : 'sim',
      wantsStreamUsage: true,
      offeredTools: tools.flatMap((tool) => (isRecord(tool) && typeof tool['name'] === 'string' ? [tool['name']] : [])),
      messages: Array.isArray(request['messages']) ? request['messages'] : [],
      tools,
      ...(request['system'] !== undefined ? { system: request['system'] } : {}),
    };
  },

  json(plan) {
    const { reply } = plan;
    const content =
      reply.kind === 'tool_calls'
        ? reply.calls.map((call, i) => ({ type: 'tool_use', id: toolId(plan, i, call.id), name: call.name, input: inputOf(call.argumentsJson) }))
        : [{ type: 'text', text: reply.text }];
    return {
      id: `msg_sim_${plan.serial}`,
      type: 'message',
      role: 'assistant',
      model: plan.model,
      content,
      stop_reason: stopReason(plan),
      stop_sequence: null,
      usage: { input_tokens: plan.usage.inputTokens, output_tokens: plan.usage.outputTokens },
    };
  },

  stream(plan): StreamFrames {
    const { reply } = plan;
    const frames = [
      sse({
        type: 'message_start',
        message: {
          id: `msg_sim_${plan.serial}`,
          type: 'message',
          role: 'assistant',
          model: plan.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          // Input tokens up front, as the real API sends them. Output tokens 0 here (the real API sends a small count):
          // LangChain adds this count to message_delta's, so any other value would skew the scripted total.
          usage: { input_tokens: plan.usage.inputTokens, output_tokens: 0 },
        },
      }),
    ];
    if (reply.kind === 'tool_calls') {
      reply.calls.forEach((call, index) => {
        frames.push(sse({ type: 'content_block_start', index, content_block: { type: 'tool_use', id: toolId(plan, index, call.id), name: call.name, input: {} } }));
        for (const partial_json of splitInto(call.argumentsJson, plan.chunks)) frames.push(sse({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } }));
        frames.push(sse({ type: 'content_block_stop', index }));
      });
    } else {
      frames.push(sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }));
      for (const text of splitInto(reply.text, plan.chunks)) frames.push(sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }));
    }
    const contentEnd = frames.length;
    if (reply.kind !== 'tool_calls') frames.push(sse({ type: 'content_block_stop', index: 0 }));
    frames.push(sse({ type: 'message_delta', delta: { stop_reason: stopReason(plan), stop_sequence: null }, usage: { output_tokens: plan.usage.outputTokens } }));
    frames.push(sse({ type: 'message_stop' }));
    return { frames, contentEnd };
  },

  error(status, message) {
    const type = status === 429 ? 'rate_limit_error' : status === 529 ? 'overloaded_error' : status >= 500 ? 'api_error' : 'invalid_request_error';
    return { type: 'error', error: { type, message } };
  },
};
