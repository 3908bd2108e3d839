import { RPC_AGENT_TOOLS, isMutatingEvent } from '@naalya/agent-tools';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { createMiddleware } from 'langchain';
import { toolCallIdempotencyKey } from '../tools/build-agent-tools.js';
import { resolveRuntimeContext } from '../tools/tool-context.js';

const EVENT_BY_TOOL: ReadonlyMap<string, string> = new Map(RPC_AGENT_TOOLS.map((definition) => [definition.name, definition.event]));

/**
 * What the model reads in place of the result of a call its run never got back: the run was cancelled, taken over or
 * abandoned while the call was in flight. A write may have been saved (a committed write stays), so its outcome is
 * unknown, never "failed".
 */
export const stoppedToolCallMessage = (toolName: string, callId?: string): string => {
  const event = EVENT_BY_TOOL.get(toolName);
  const changes = event === undefined ? 'Anything it changed may have been saved.' : isMutatingEvent(event) ? 'The change may have been saved.' : '';
  const check = event !== undefined && isMutatingEvent(event) && callId ? ` You can check it with get_tool_call_outcome and callId "${callId}".` : '';
  return [
    `The "${toolName}" call was stopped before its result came back: the run it belonged to was stopped.`,
    changes,
    `Its outcome is unknown; do not repeat it unless the user asks.${check}`,
  ]
    .filter(Boolean)
    .join(' ');
};

/**
 * The conversation with every tool call that never got its result answered by a ToolMessage right after its AI message,
 * or undefined when none is missing. Providers refuse a conversation whose tool calls are not all answered, so one
 * stopped run would otherwise break its thread for good.
 */
export const answerStoppedToolCalls = (messages: readonly BaseMessage[], threadId?: string): BaseMessage[] | undefined => {
  const answered = new Set(messages.flatMap((message) => (ToolMessage.isInstance(message) ? [message.tool_call_id] : [])));
  let patched = false;
  const out: BaseMessage[] = [];
  for (const message of messages) {
    out.push(message);
    if (!AIMessage.isInstance(message)) continue;
    for (const call of message.tool_calls ?? []) {
      if (!call.id || answered.has(call.id)) continue;
      patched = true;
      const callId = threadId ? toolCallIdempotencyKey(threadId, call.id) : undefined;
      out.push(new ToolMessage({ content: stoppedToolCallMessage(call.name, callId), name: call.name, tool_call_id: call.id, status: 'error' }));
    }
  }
  return patched ? out : undefined;
};

/**
 * Answers, for the model's eyes only, the tool calls of a stopped run (cancelled, superseded, abandoned mid-call), so the
 * next message on the thread can be answered. The checkpoint keeps the history as it was; only what the model is sent
 * is completed. Within a run every call is answered before the model is called again, so this changes nothing else.
 */
export const stoppedToolCallsMiddleware = () =>
  createMiddleware({
    name: 'StoppedToolCallsMiddleware',
    wrapModelCall: async (request, handler) => {
      const threadId = resolveRuntimeContext(request.runtime)?.run.threadId;
      const messages = answerStoppedToolCalls(request.messages, threadId);
      return handler(messages ? { ...request, messages } : request);
    },
  });
