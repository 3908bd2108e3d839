import { AIMessage } from '@langchain/core/messages';
import { isGraphBubbleUp } from '@langchain/langgraph';
import { GenAi, GenAiOperation, SpanKind, currentAgent, failSpan, startSpan, tracingEnabled, withActiveSpan, withAgent, type Attributes, type Span } from '@naalya/telemetry';
import { createMiddleware } from 'langchain';

/** deepagents' handover tool: its call runs the specialist named in `subagent_type`. */
const TASK_TOOL = 'task';

/** The model's name and provider as the langchain chat model reports them (GenAI conventions v1.37.0). */
const modelAttributes = (model: unknown): Attributes => {
  const described = model as { model?: unknown; modelName?: unknown; _llmType?: () => string };
  const name = typeof described.model === 'string' ? described.model : typeof described.modelName === 'string' ? described.modelName : undefined;
  let provider: string | undefined;
  try {
    provider = typeof described._llmType === 'function' ? described._llmType() : undefined;
  } catch {
    provider = undefined;
  }
  return { ...(name ? { [GenAi.REQUEST_MODEL]: name } : {}), ...(provider ? { [GenAi.PROVIDER_NAME]: provider } : {}) };
};

const threadOf = (runtime: unknown): string | undefined => {
  const threadId = (runtime as { context?: { run?: { threadId?: unknown } } } | undefined)?.context?.run?.threadId;
  return typeof threadId === 'string' ? threadId : undefined;
};

/**
 * Runs `work` in `span` and ends it. An interrupt (ask_user, a confirmation) or a stopped step bubbles up through
 * here by design: the span ends as it stood, not failed. Errors are recorded by class, never by message (model and
 * tool texts may carry user data).
 */
const traced = async <T>(span: Span | undefined, work: () => Promise<T>): Promise<T> => {
  try {
    return await withActiveSpan(span, work);
  } catch (error) {
    if (!isGraphBubbleUp(error)) failSpan(span, error);
    throw error;
  } finally {
    span?.end();
  }
};

/** An `invoke_agent` span around one agent's turn (Rover's step, or a specialist run through `task`). */
export const invokeAgent = <T>(agent: string, conversationId: string | undefined, work: () => Promise<T>): Promise<T> => {
  if (!tracingEnabled()) return work();
  const span = startSpan(`${GenAiOperation.INVOKE_AGENT} ${agent}`, {
    kind: SpanKind.INTERNAL,
    attributes: {
      [GenAi.OPERATION_NAME]: GenAiOperation.INVOKE_AGENT,
      [GenAi.AGENT_NAME]: agent,
      ...(conversationId ? { [GenAi.CONVERSATION_ID]: conversationId } : {}),
    },
  });
  return traced(span, () => withAgent(agent, work));
};

/**
 * The GenAI spans of the worker (OpenTelemetry GenAI semantic conventions v1.37.0): `chat <model>` for each model
 * call, with its token usage, and `execute_tool <tool>` for each tool call, Rover's and every specialist's; a `task`
 * call (the handover to a specialist) holds that specialist's `invoke_agent` span. Spans nest under the run's consumer
 * span, so a tool call's AMQP hop and the server's execute() continue the same trace.
 *
 * Prompts, replies and tool arguments are not recorded: they carry pupils' and staff members' data.
 */
export const tracingMiddleware = () =>
  createMiddleware({
    name: 'TracingMiddleware',
    wrapModelCall: async (request, handler) => {
      if (!tracingEnabled()) return handler(request);
      const attributes = modelAttributes(request.model);
      const agent = currentAgent();
      const conversationId = threadOf(request.runtime);
      const span = startSpan(`${GenAiOperation.CHAT}${attributes[GenAi.REQUEST_MODEL] ? ` ${String(attributes[GenAi.REQUEST_MODEL])}` : ''}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          [GenAi.OPERATION_NAME]: GenAiOperation.CHAT,
          ...attributes,
          ...(agent ? { [GenAi.AGENT_NAME]: agent } : {}),
          ...(conversationId ? { [GenAi.CONVERSATION_ID]: conversationId } : {}),
        },
      });
      return traced(span, async () => {
        const response = await handler(request);
        if (span && AIMessage.isInstance(response)) {
          const usage = response.usage_metadata;
          if (usage) {
            span.setAttribute(GenAi.USAGE_INPUT_TOKENS, usage.input_tokens);
            span.setAttribute(GenAi.USAGE_OUTPUT_TOKENS, usage.output_tokens);
          }
          if (response.id) span.setAttribute(GenAi.RESPONSE_ID, response.id);
          const metadata = response.response_metadata as { model_name?: unknown; model?: unknown; finish_reason?: unknown; stop_reason?: unknown } | undefined;
          const responseModel = metadata?.model_name ?? metadata?.model;
          if (typeof responseModel === 'string') span.setAttribute(GenAi.RESPONSE_MODEL, responseModel);
          const finish = metadata?.finish_reason ?? metadata?.stop_reason;
          if (typeof finish === 'string') span.setAttribute(GenAi.RESPONSE_FINISH_REASONS, [finish]);
        }
        return response;
      });
    },
    wrapToolCall: async (request, handler) => {
      if (!tracingEnabled()) return handler(request);
      const { name, id, args } = request.toolCall;
      const agent = currentAgent();
      const span = startSpan(`${GenAiOperation.EXECUTE_TOOL} ${name}`, {
        kind: SpanKind.INTERNAL,
        attributes: {
          [GenAi.OPERATION_NAME]: GenAiOperation.EXECUTE_TOOL,
          [GenAi.TOOL_NAME]: name,
          [GenAi.TOOL_TYPE]: 'function',
          ...(id ? { [GenAi.TOOL_CALL_ID]: id } : {}),
          ...(agent ? { [GenAi.AGENT_NAME]: agent } : {}),
        },
      });
      const specialist = name === TASK_TOOL ? (args as { subagent_type?: unknown } | undefined)?.subagent_type : undefined;
      return traced(span, () =>
        typeof specialist === 'string' ? invokeAgent(specialist, threadOf(request.runtime), async () => handler(request)) : Promise.resolve(handler(request)),
      );
    },
  });
