import { randomUUID } from 'node:crypto';
import {
  AGENT_TOOL_ROLES,
  RPC_AGENT_TOOLS,
  agentInterruptValueSchema,
  type AgentInterrupt,
  type AgentRunEvent,
  type AgentSpeaker,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import { AIMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';

type RunIds = { runId: string; threadId: string };

// Table-driven: the RabbitMQ event of every RPC tool, so a tool added to the registry needs no change here.
const EVENT_BY_TOOL_NAME: ReadonlyMap<string, string> = new Map(
  RPC_AGENT_TOOLS.map((definition: AnyAgentTool) => [definition.name, definition.event]),
);

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const textOf = (content: BaseMessage['content']): string =>
  typeof content === 'string'
    ? content
    : content.map((block) => (isRecord(block) && block['type'] === 'text' && typeof block['text'] === 'string' ? block['text'] : '')).join('');

// Subagents are compiled by deepagents with their SubAgent name, which is the role; createAgent stamps that
// name on every AI message it produces. Anything else spoke as Rover.
const speakerOf = (message: AIMessage): AgentSpeaker =>
  AGENT_TOOL_ROLES.find((role) => role === message.name) ?? 'rover';

// An update is { node: { messages } } or, from a node returning several Commands, { node: [{ messages }] }.
const messagesOf = (update: unknown): BaseMessage[] => {
  if (!isRecord(update)) return [];
  return Object.entries(update).flatMap(([node, value]) => {
    if (node.startsWith('__')) return [];
    const parts = Array.isArray(value) ? value : [value];
    return parts.flatMap((part) => (isRecord(part) && Array.isArray(part['messages']) ? (part['messages'] as BaseMessage[]) : []));
  });
};

/**
 * Turns LangGraph stream chunks (`streamMode: ['updates', 'custom']`, `subgraphs: true`) into run events, in the
 * order they happened. Per AI message: its text (START, one CONTENT, END), then each tool call (START with
 * the RabbitMQ event for RPC tools, END as soon as its arguments are complete, AG-UI style); the tool's
 * RESULT follows when the tools node finishes. One translator per run step.
 */
export class RunEventTranslator {
  private readonly started = new Set<string>();
  private readonly answered = new Set<string>();

  constructor(
    private readonly ids: RunIds,
    private readonly hopMsFor: (toolCallId: string) => number | undefined,
  ) {}

  translate(chunk: unknown): AgentRunEvent[] {
    if (!Array.isArray(chunk)) return [];
    // [namespace, mode, data] with subgraphs; [mode, data] without.
    const [mode, data] = chunk.length === 3 ? [chunk[1], chunk[2]] : [chunk[0], chunk[1]];
    if (mode === 'custom') return this.custom(data);
    if (mode === 'updates') return messagesOf(data).flatMap((message) => this.message(message));
    return [];
  }

  private custom(data: unknown): AgentRunEvent[] {
    // Only streamOnSuccess events reach the writer; anything else is not ours to relay.
    if (!isRecord(data) || typeof data['name'] !== 'string') return [];
    const { name, ...value } = data;
    return [{ ...this.ids, type: 'CUSTOM', name, value }];
  }

  private message(message: BaseMessage): AgentRunEvent[] {
    if (AIMessage.isInstance(message)) return this.aiMessage(message);
    if (ToolMessage.isInstance(message)) return this.toolResult(message);
    return [];
  }

  private aiMessage(message: AIMessage): AgentRunEvent[] {
    const speaker = speakerOf(message);
    const events: AgentRunEvent[] = [];
    const text = textOf(message.content);
    if (text.trim()) {
      // Model message ids are not unique across agents (fake models number them), so the event gets its own.
      const messageId = randomUUID();
      events.push(
        { ...this.ids, type: 'TEXT_MESSAGE_START', messageId, speaker },
        { ...this.ids, type: 'TEXT_MESSAGE_CONTENT', messageId, delta: text },
        { ...this.ids, type: 'TEXT_MESSAGE_END', messageId },
      );
    }
    for (const call of message.tool_calls ?? []) {
      if (!call.id || this.started.has(call.id)) continue;
      this.started.add(call.id);
      const event = EVENT_BY_TOOL_NAME.get(call.name);
      events.push(
        {
          ...this.ids,
          type: 'TOOL_CALL_START',
          toolCallId: call.id,
          toolCallName: call.name,
          speaker,
          ...(event ? { event } : {}),
          args: isRecord(call.args) ? call.args : {},
        },
        { ...this.ids, type: 'TOOL_CALL_END', toolCallId: call.id },
      );
    }
    return events;
  }

  private toolResult(message: ToolMessage): AgentRunEvent[] {
    const toolCallId = message.tool_call_id;
    if (!toolCallId || this.answered.has(toolCallId)) return [];
    this.answered.add(toolCallId);
    const hopMs = this.hopMsFor(toolCallId);
    return [{ ...this.ids, type: 'TOOL_CALL_RESULT', toolCallId, content: textOf(message.content), ...(hopMs === undefined ? {} : { hopMs }) }];
  }
}

type PendingInterrupt = { id?: string; value?: unknown };

/** The pending questions and confirmations of a paused run, attributed to whoever asked. */
export const toAgentInterrupts = (interrupts: readonly PendingInterrupt[]): AgentInterrupt[] =>
  interrupts.flatMap((pending): AgentInterrupt[] => {
    if (!pending.id) return [];
    const parsed = agentInterruptValueSchema.safeParse(pending.value);
    if (parsed.success) return [{ interruptId: pending.id, ...parsed.data }];
    // Not one of ours (a library's own interrupt, say): still surfaced, so the run never hangs silently.
    const question = typeof pending.value === 'string' ? pending.value : JSON.stringify(pending.value ?? null);
    return [{ interruptId: pending.id, question, askedBy: 'rover' as const }];
  });
