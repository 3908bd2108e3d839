import type { RunInterrupt, RunStreamEvent } from '@naalya/agent-tools';

/** A run's server-sent events read back as what happened: who worked, which calls crossed, what was asked and said. */

export type ToolResult = { ok: true; data: unknown; scopeContext?: string } | { ok: false; error: string; code?: string };

export type ToolCallTrace = {
  id: string;
  name: string;
  /** The arguments as the model streamed them; undefined when they are not a JSON object. */
  args: Record<string, unknown> | undefined;
  speaker: string;
  /** The call has a RabbitMQ event: it is a tool of the server, not a local one. */
  rpc: boolean;
  /** The call reached the server (the worker measured its hop). */
  crossedHop: boolean;
  result?: ToolResult;
  /** Position of its TOOL_CALL_START among the run's events. */
  at: number;
};

export type InterruptTrace = {
  reason: RunInterrupt['reason'];
  message: string;
  askedBy: string;
  toolCallId?: string;
  answer?: string;
  at: number;
};

export type Trace = {
  /** The specialists Rover handed work to, in order (from SUBAGENT_STARTED). */
  specialists: string[];
  calls: ToolCallTrace[];
  interrupts: InterruptTrace[];
  /** Everything the assistants said, message by message. */
  answer: string;
  error?: { code: string; message: string };
  usage?: { inputTokens: number; outputTokens: number };
};

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** A tool's result as the model read it: `{ data, scopeContext }`, `{ error, code }`, or text (a local tool's own error). */
export const readToolResult = (content: string): ToolResult => {
  const parsed = parseJson(content);
  if (isRecord(parsed) && typeof parsed['error'] === 'string') {
    return { ok: false, error: parsed['error'], ...(typeof parsed['code'] === 'string' ? { code: parsed['code'] } : {}) };
  }
  if (isRecord(parsed) && 'data' in parsed) {
    return { ok: true, data: parsed['data'], ...(typeof parsed['scopeContext'] === 'string' ? { scopeContext: parsed['scopeContext'] } : {}) };
  }
  // A local tool that failed answers in plain text ("Error: ..."); anything else is data.
  return /^error\b/i.test(content.trim()) ? { ok: false, error: content.trim() } : { ok: true, data: parsed ?? content };
};

/** The trace of a run's events (all its steps, resumes included), with the answers the eval's user gave by interrupt id. */
export const traceOf = (events: readonly RunStreamEvent[], answers: ReadonlyMap<string, string> = new Map()): Trace => {
  const speakers = new Map<string, string>();
  const specialists: string[] = [];
  const calls = new Map<string, ToolCallTrace>();
  const argsText = new Map<string, string>();
  const texts = new Map<string, string>();
  const interrupts: InterruptTrace[] = [];
  const trace: Trace = { specialists, calls: [], interrupts, answer: '' };
  events.forEach((event, at) => {
    switch (event.type) {
      case 'SUBAGENT_STARTED':
        speakers.set(event.subagentRunId, event.name);
        specialists.push(event.name);
        break;
      case 'TOOL_CALL_START':
        calls.set(event.toolCallId, {
          id: event.toolCallId,
          name: event.toolCallName,
          args: undefined,
          speaker: (event.subagentRunId && speakers.get(event.subagentRunId)) || 'rover',
          rpc: event.metadata?.event !== undefined,
          crossedHop: false,
          at,
        });
        break;
      case 'TOOL_CALL_ARGS':
        argsText.set(event.toolCallId, (argsText.get(event.toolCallId) ?? '') + event.delta);
        break;
      case 'TOOL_CALL_RESULT': {
        const call = calls.get(event.toolCallId);
        if (call) {
          call.result = readToolResult(event.content);
          call.crossedHop = event.metadata?.hopMs !== undefined;
        }
        break;
      }
      case 'TEXT_MESSAGE_CONTENT':
        texts.set(event.messageId, (texts.get(event.messageId) ?? '') + event.delta);
        break;
      case 'RUN_FINISHED':
        if (event.metadata?.usage) trace.usage = { inputTokens: event.metadata.usage.inputTokens, outputTokens: event.metadata.usage.outputTokens };
        if (event.outcome.type === 'interrupt') {
          for (const interrupt of event.outcome.interrupts) {
            const answer = answers.get(interrupt.id);
            interrupts.push({
              reason: interrupt.reason,
              message: interrupt.message,
              askedBy: interrupt.metadata.askedBy,
              ...(interrupt.toolCallId ? { toolCallId: interrupt.toolCallId } : {}),
              ...(answer !== undefined ? { answer } : {}),
              at,
            });
          }
        }
        break;
      case 'RUN_ERROR':
        trace.error = { code: event.code, message: event.message };
        break;
      default:
        break;
    }
  });
  for (const call of calls.values()) {
    const parsed = parseJson(argsText.get(call.id) ?? '{}');
    call.args = isRecord(parsed) ? parsed : undefined;
  }
  trace.calls = [...calls.values()];
  trace.answer = [...texts.values()].filter((text) => text.trim()).join('\n');
  return trace;
};
