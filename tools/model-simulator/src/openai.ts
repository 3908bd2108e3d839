import { splitInto } from './script.js';
import { isRecord, type ReplyPlan, type StreamFrames, type Wire } from './wire.js';

/** The OpenAI Chat Completions API (`POST /v1/chat/completions`), as the `openai` SDK reads it. */

const sse = (data: unknown): string => `data: ${JSON.stringify(data)}\n\n`;

const usageOf = (plan: ReplyPlan) => ({
  prompt_tokens: plan.usage.inputTokens,
  completion_tokens: plan.usage.outputTokens,
  total_tokens: plan.usage.inputTokens + plan.usage.outputTokens,
});

const callId = (plan: ReplyPlan, index: number, id: string | undefined) => id ?? `call_sim_${plan.serial}_${index}`;

const finishReason = (plan: ReplyPlan) => (plan.reply.kind === 'tool_calls' ? 'tool_calls' : 'stop');

export const openAiWire: Wire = {
  name: 'openai',

  readRequest(body) {
    const request = isRecord(body) ? body : {};
    const tools = Array.isArray(request['tools']) ? request['tools'] : [];
    const streamOptions = isRecord(request['stream_options']) ? request['stream_options'] : {};
    return {
      stream: request['stream'] === true,
      model: typeof request['model'] === 'string' ? request['model'] : 'sim',
      // The real API sends usage in a stream only when asked to; LangChain asks by default.
      wantsStreamUsage: streamOptions['include_usage'] === true,
      offeredTools: tools.flatMap((tool) => (isRecord(tool) && isRecord(tool['function']) && typeof tool['function']['name'] === 'string' ? [tool['function']['name']] : [])),
      messages: Array.isArray(request['messages']) ? request['messages'] : [],
      tools,
    };
  },

  json(plan) {
    const { reply } = plan;
    const message =
      reply.kind === 'text'
        ? { role: 'assistant', content: reply.text, refusal: null }
        : reply.kind === 'refusal'
          ? { role: 'assistant', content: null, refusal: reply.text }
          : {
              role: 'assistant',
              content: null,
              refusal: null,
              tool_calls: reply.calls.map((call, i) => ({ id: callId(plan, i, call.id), type: 'function', function: { name: call.name, arguments: call.argumentsJson } })),
            };
    return {
      id: `chatcmpl-sim-${plan.serial}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: plan.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(plan) }],
      usage: usageOf(plan),
    };
  },

  stream(plan, includeUsage): StreamFrames {
    const base = { id: `chatcmpl-sim-${plan.serial}`, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: plan.model };
    const chunk = (delta: unknown, finish_reason: string | null = null) => sse({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason }] });
    const { reply } = plan;
    const frames = [chunk({ role: 'assistant', content: '' })];
    if (reply.kind === 'text') for (const piece of splitInto(reply.text, plan.chunks)) frames.push(chunk({ content: piece }));
    if (reply.kind === 'refusal') for (const piece of splitInto(reply.text, plan.chunks)) frames.push(chunk({ refusal: piece }));
    if (reply.kind === 'tool_calls') {
      // As the real API does: each call in turn, its id and name first, then its arguments in fragments.
      reply.calls.forEach((call, index) => {
        frames.push(chunk({ tool_calls: [{ index, id: callId(plan, index, call.id), type: 'function', function: { name: call.name, arguments: '' } }] }));
        for (const fragment of splitInto(call.argumentsJson, plan.chunks)) frames.push(chunk({ tool_calls: [{ index, function: { arguments: fragment } }] }));
      });
    }
    const contentEnd = frames.length;
    frames.push(chunk({}, finishReason(plan)));
    if (includeUsage) frames.push(sse({ ...base, choices: [], usage: usageOf(plan) }));
    frames.push('data: [DONE]\n\n');
    return { frames, contentEnd };
  },

  error(status, message) {
    const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
    return { error: { message, type, param: null, code: type } };
  },
};
