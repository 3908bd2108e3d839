import { randomUUID } from 'node:crypto';
import {
  AGENT_TOOL_ROLES,
  RPC_AGENT_TOOLS,
  agentInterruptValueSchema,
  type AgentInterrupt,
  type AgentRunEvent,
  type AgentSpeaker,
  type AgentToolRole,
  type AnyAgentTool,
  type RunSnapshotMessage,
} from '@naalya/agent-tools';
import { AIMessage, AIMessageChunk, HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';

/** An event as the translator makes it: the executor adds the ids and the timestamp. */
export type RunEventDraft<E = AgentRunEvent> = E extends AgentRunEvent ? Omit<E, 'runId' | 'threadId' | 'timestamp'> : never;

// Table-driven: the RabbitMQ event of every RPC tool, so a tool added to the registry needs no change here.
const EVENT_BY_TOOL_NAME: ReadonlyMap<string, string> = new Map(
  RPC_AGENT_TOOLS.map((definition: AnyAgentTool) => [definition.name, definition.event]),
);

/** deepagents' tool that hands work to a specialist: its call opens a subagent. */
const TASK_TOOL_NAME = 'task';

const MAX_ID_LENGTH = 100;

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

const textOf = (content: BaseMessage['content']): string =>
  typeof content === 'string'
    ? content
    : content.map((block) => (isRecord(block) && block['type'] === 'text' && typeof block['text'] === 'string' ? block['text'] : '')).join('');

const roleNamed = (name: unknown): AgentToolRole | undefined => AGENT_TOOL_ROLES.find((role) => role === name);

// Subagents are compiled by deepagents with their SubAgent name, which is the role; createAgent stamps that name on
// every AI message it produces (and on its model calls' metadata, lc_agent_name). Anything else spoke as Rover.
const speakerNamed = (name: unknown): AgentSpeaker => roleNamed(name) ?? 'rover';

// A model's or a node's id when it fits the contract; our own otherwise (ids are only keys to the client).
const eventIdOf = (id: string | undefined): string => (id && id.length <= MAX_ID_LENGTH ? id : randomUUID());

// An update is { node: { messages } } or, from a node returning several Commands, { node: [{ messages }] }.
const messagesOfUpdate = (update: unknown): BaseMessage[] => {
  if (!isRecord(update)) return [];
  return Object.entries(update).flatMap(([node, value]) => {
    if (node.startsWith('__')) return [];
    const parts = Array.isArray(value) ? value : [value];
    return parts.flatMap((part) => (isRecord(part) && Array.isArray(part['messages']) ? (part['messages'] as BaseMessage[]) : []));
  });
};

type Subagent = { subagentRunId: string; role: AgentToolRole; parentToolCallId?: string; open: boolean };

type StreamedCall = { id?: string; name?: string; started: boolean; ended: boolean; skip: boolean; buffered: string[] };

/** A message the model is streaming: what of it has gone out so far. */
type StreamedMessage = {
  textId?: string;
  textOpen: boolean;
  speaker: AgentSpeaker;
  subagent?: Subagent;
  calls: Map<number, StreamedCall>;
  lastIndex?: number;
};

/**
 * Turns LangGraph stream chunks (`streamMode: ['messages', 'updates', 'custom', 'tasks']`, `subgraphs: true`, so each
 * chunk is `[namespace, mode, data]`) into run events, in the order they happened. One translator per run step.
 *
 * - `messages`: a streaming model's chunks (AIMessageChunk). Text goes out as it comes (TEXT_MESSAGE_START naming the
 *   speaker before the first delta); each tool call as TOOL_CALL_START once its id and name are known (a chunk with a
 *   new index ends the call before it), then its tool_call_chunks' argument fragments as TOOL_CALL_ARGS. Whole
 *   messages in this mode (a non-streaming model's, a node's output) are left to `updates`, which carries them anyway.
 * - `updates`: the finished message. One that was streamed only closes what is still open (TEXT_MESSAGE_END,
 *   TOOL_CALL_END) and adds any tool call the chunks did not carry; one that was never streamed goes out whole. Tool
 *   messages become TOOL_CALL_RESULT.
 * - `tasks`: a tools task running deepagents' `task` call is where a specialist runs; its namespace (`tools:<task id>`)
 *   is how the specialist's events are told apart. Its first event is preceded by SUBAGENT_STARTED, and every event it
 *   produces carries the subagentRunId; SUBAGENT_FINISHED (success) precedes the `task` call's result.
 * - `custom`: streamOnSuccess notices, as CUSTOM.
 */
export class RunEventTranslator {
  private readonly startedCalls = new Set<string>();
  private readonly answered = new Set<string>();
  /** Messages already emitted whole or closed, by namespace and id: an update seen again sends nothing. */
  private readonly done = new Set<string>();
  private readonly streaming = new Map<string, StreamedMessage>();
  /** By namespace segment (`tools:<task id>`): the specialist a `task` call runs there. */
  private readonly taskCalls = new Map<string, { parentToolCallId: string; role?: AgentToolRole }>();
  private readonly subagents = new Map<string, Subagent>();

  constructor(private readonly hopMsFor: (toolCallId: string) => number | undefined) {}

  translate(chunk: unknown): RunEventDraft[] {
    if (!Array.isArray(chunk)) return [];
    // [namespace, mode, data] with subgraphs; [mode, data] without.
    const [namespace, mode, data] = (chunk.length === 3 ? chunk : [[], chunk[0], chunk[1]]) as [unknown, unknown, unknown];
    const ns = Array.isArray(namespace) ? namespace.filter((part): part is string => typeof part === 'string') : [];
    if (mode === 'messages') return this.streamed(ns, data);
    if (mode === 'updates') return messagesOfUpdate(data).flatMap((message) => this.finished(ns, message));
    if (mode === 'tasks') return this.task(ns, data);
    if (mode === 'custom') return this.custom(ns, data);
    return [];
  }

  /**
   * What is still open when the step's stream ends: text and tool calls end, and each specialist still running finishes
   * as suspended on the interrupts raised inside it (by the task that ran it), or as a success.
   */
  end(interrupts: readonly { id: string; taskId?: string }[] = []): RunEventDraft[] {
    const events: RunEventDraft[] = [];
    for (const [key, message] of this.streaming) events.push(...this.close(key, message));
    for (const subagent of this.subagents.values()) {
      if (!subagent.open) continue;
      const interruptIds = interrupts.filter((interrupt) => interrupt.taskId && this.subagentOfTask(interrupt.taskId) === subagent).map((i) => i.id);
      events.push(this.finishSubagent(subagent, interruptIds.length > 0 ? { type: 'suspended', interruptIds } : { type: 'success' }));
    }
    return events;
  }

  /** The specialist that ran in this task of Rover's graph (where an interrupt it raised is pending), if one did. */
  subagentRunIdOfTask(taskId: string): string | undefined {
    return this.subagentOfTask(taskId)?.subagentRunId;
  }

  private subagentOfTask(taskId: string): Subagent | undefined {
    return this.subagents.get(`${TASK_NAMESPACE_NODE}:${taskId}`);
  }

  private task(ns: string[], data: unknown): RunEventDraft[] {
    // A task's start carries its input; the tools node's input names the one tool call it runs (createAgent's Send).
    if (!isRecord(data) || typeof data['id'] !== 'string' || data['name'] !== TASK_NAMESPACE_NODE || !isRecord(data['input'])) return [];
    const call = data['input']['lg_tool_call'];
    if (!isRecord(call) || call['name'] !== TASK_TOOL_NAME || typeof call['id'] !== 'string') return [];
    const args = isRecord(call['args']) ? call['args'] : {};
    const segment = `${TASK_NAMESPACE_NODE}:${data['id']}`;
    if (ns.length === 0) this.taskCalls.set(segment, { parentToolCallId: call['id'], role: roleNamed(args['subagent_type']) });
    return [];
  }

  // The specialist whose graph produced a chunk: its namespace starts with the task that runs it. A namespace no
  // `task` call announced still belongs to a specialist when its messages name one (no parent call is known then).
  private subagentFor(ns: string[], speaker: AgentSpeaker | undefined, events: RunEventDraft[]): Subagent | undefined {
    const segment = ns[0];
    if (segment === undefined) return undefined;
    const known = this.subagents.get(segment);
    if (known) return known;
    const call = this.taskCalls.get(segment);
    const role = call?.role ?? (speaker === 'rover' ? undefined : speaker);
    if (!role) return undefined;
    const subagent: Subagent = { subagentRunId: randomUUID(), role, ...(call ? { parentToolCallId: call.parentToolCallId } : {}), open: true };
    this.subagents.set(segment, subagent);
    events.push({
      type: 'SUBAGENT_STARTED',
      subagentRunId: subagent.subagentRunId,
      name: role,
      ...(subagent.parentToolCallId ? { parentToolCallId: subagent.parentToolCallId } : {}),
    });
    return subagent;
  }

  private finishSubagent(subagent: Subagent, outcome: { type: 'success' } | { type: 'suspended'; interruptIds: string[] }): RunEventDraft {
    subagent.open = false;
    return { type: 'SUBAGENT_FINISHED', subagentRunId: subagent.subagentRunId, outcome };
  }

  private custom(ns: string[], data: unknown): RunEventDraft[] {
    // Only streamOnSuccess events reach the writer; anything else is not ours to relay.
    if (!isRecord(data) || typeof data['name'] !== 'string') return [];
    const { name, ...value } = data;
    const events: RunEventDraft[] = [];
    const subagent = this.subagentFor(ns, undefined, events);
    events.push({ type: 'CUSTOM', name, value, ...attributedTo(subagent) });
    return events;
  }

  private streamed(ns: string[], data: unknown): RunEventDraft[] {
    if (!Array.isArray(data)) return [];
    const [chunk, metadata] = data as [unknown, unknown];
    if (!AIMessageChunk.isInstance(chunk) || !chunk.id) return [];
    const key = messageKey(ns, chunk.id);
    if (this.done.has(key)) return [];
    const events: RunEventDraft[] = [];
    let message = this.streaming.get(key);
    if (!message) {
      const speaker = speakerNamed(isRecord(metadata) ? metadata['lc_agent_name'] : undefined);
      const subagent = this.subagentFor(ns, speaker, events);
      message = { textOpen: false, speaker: subagent?.role ?? speaker, subagent, calls: new Map() };
      this.streaming.set(key, message);
    }
    const attribution = attributedTo(message.subagent);
    const text = textOf(chunk.content);
    if (text) {
      if (!message.textId) {
        message.textId = randomUUID();
        message.textOpen = true;
        events.push({ type: 'TEXT_MESSAGE_START', messageId: message.textId, role: 'assistant', name: message.speaker, ...attribution });
      }
      if (message.textOpen) events.push({ type: 'TEXT_MESSAGE_CONTENT', messageId: message.textId, delta: text, ...attribution });
    }
    for (const piece of chunk.tool_call_chunks ?? []) {
      const index = piece.index ?? 0;
      let call = message.calls.get(index);
      // A provider that reuses an index for the next call gives it a new id.
      if (call && piece.id && call.id && piece.id !== call.id) {
        events.push(...this.endCall(call, attribution));
        call = undefined;
      }
      if (!call) {
        call = { started: false, ended: false, skip: false, buffered: [] };
        message.calls.set(index, call);
      }
      // Calls stream one after the other: a new index means the one before has all its arguments.
      if (message.lastIndex !== undefined && message.lastIndex !== index) {
        const before = message.calls.get(message.lastIndex);
        if (before) events.push(...this.endCall(before, attribution));
      }
      message.lastIndex = index;
      if (piece.id) call.id ??= piece.id;
      if (piece.name) call.name ??= piece.name;
      const args = typeof piece.args === 'string' ? piece.args : '';
      if (!call.started && !call.skip && call.id && call.name) {
        if (this.startedCalls.has(call.id)) call.skip = true;
        else {
          events.push(this.startCall(call.id, call.name, message.textId, attribution));
          call.started = true;
          for (const buffered of call.buffered.splice(0)) events.push({ type: 'TOOL_CALL_ARGS', toolCallId: call.id, delta: buffered, ...attribution });
        }
      }
      if (!args || call.skip || call.ended) continue;
      if (call.started && call.id) events.push({ type: 'TOOL_CALL_ARGS', toolCallId: call.id, delta: args, ...attribution });
      else call.buffered.push(args);
    }
    return events;
  }

  private startCall(toolCallId: string, toolCallName: string, parentMessageId: string | undefined, attribution: { subagentRunId?: string }): RunEventDraft {
    this.startedCalls.add(toolCallId);
    const event = EVENT_BY_TOOL_NAME.get(toolCallName);
    return {
      type: 'TOOL_CALL_START',
      toolCallId,
      toolCallName,
      ...(parentMessageId ? { parentMessageId } : {}),
      ...(event ? { metadata: { event } } : {}),
      ...attribution,
    };
  }

  private endCall(call: StreamedCall, attribution: { subagentRunId?: string }): RunEventDraft[] {
    if (!call.started || call.ended || !call.id) return [];
    call.ended = true;
    return [{ type: 'TOOL_CALL_END', toolCallId: call.id, ...attribution }];
  }

  private close(key: string, message: StreamedMessage): RunEventDraft[] {
    const attribution = attributedTo(message.subagent);
    const events: RunEventDraft[] = [];
    if (message.textOpen && message.textId) {
      message.textOpen = false;
      events.push({ type: 'TEXT_MESSAGE_END', messageId: message.textId, ...attribution });
    }
    for (const call of message.calls.values()) events.push(...this.endCall(call, attribution));
    this.streaming.delete(key);
    this.done.add(key);
    return events;
  }

  private finished(ns: string[], message: BaseMessage): RunEventDraft[] {
    if (AIMessage.isInstance(message) || AIMessageChunk.isInstance(message)) return this.aiMessage(ns, message);
    if (ToolMessage.isInstance(message)) return this.toolResult(ns, message);
    return [];
  }

  private aiMessage(ns: string[], message: AIMessage | AIMessageChunk): RunEventDraft[] {
    const key = message.id ? messageKey(ns, message.id) : undefined;
    if (key && this.done.has(key)) return [];
    const events: RunEventDraft[] = [];
    const streamed = key ? this.streaming.get(key) : undefined;
    const subagent = streamed ? streamed.subagent : this.subagentFor(ns, speakerNamed(message.name), events);
    const speaker = streamed?.speaker ?? subagent?.role ?? speakerNamed(message.name);
    const attribution = attributedTo(subagent);
    let textId = streamed?.textId;
    if (streamed && key) events.push(...this.close(key, streamed));
    else if (key) this.done.add(key);
    // Text the chunks did not carry goes out whole too: a non-streaming model's, or words put in a streamed reply that
    // had none (a refusal the provider package dropped, said in the platform's words).
    if (!textId) {
      const text = textOf(message.content);
      if (text.trim()) {
        // Model message ids are not unique across agents (fake models number them), so the event gets its own.
        textId = randomUUID();
        events.push(
          { type: 'TEXT_MESSAGE_START', messageId: textId, role: 'assistant', name: speaker, ...attribution },
          { type: 'TEXT_MESSAGE_CONTENT', messageId: textId, delta: text, ...attribution },
          { type: 'TEXT_MESSAGE_END', messageId: textId, ...attribution },
        );
      }
    }
    // Whatever the chunks did not carry (a non-streaming model, a provider that sends calls whole) goes out whole.
    for (const call of message.tool_calls ?? []) {
      if (!call.id || this.startedCalls.has(call.id)) continue;
      events.push(this.startCall(call.id, call.name, textId, attribution));
      events.push(
        { type: 'TOOL_CALL_ARGS', toolCallId: call.id, delta: JSON.stringify(isRecord(call.args) ? call.args : {}), ...attribution },
        { type: 'TOOL_CALL_END', toolCallId: call.id, ...attribution },
      );
    }
    return events;
  }

  private toolResult(ns: string[], message: ToolMessage): RunEventDraft[] {
    const toolCallId = message.tool_call_id;
    if (!toolCallId || this.answered.has(toolCallId)) return [];
    this.answered.add(toolCallId);
    const events: RunEventDraft[] = [];
    // The specialist a `task` call ran has finished once the call has its result.
    for (const handedOver of this.subagents.values()) {
      if (handedOver.open && handedOver.parentToolCallId === toolCallId) events.push(this.finishSubagent(handedOver, { type: 'success' }));
    }
    const subagent = this.subagentFor(ns, undefined, events);
    const hopMs = this.hopMsFor(toolCallId);
    events.push({
      type: 'TOOL_CALL_RESULT',
      messageId: eventIdOf(message.id),
      toolCallId,
      role: 'tool',
      content: textOf(message.content),
      ...(hopMs === undefined ? {} : { metadata: { hopMs } }),
      ...attributedTo(subagent),
    });
    return events;
  }
}

/** The node whose tasks run tool calls in createAgent's graph (one task per call); `tools:<task id>` in a namespace. */
const TASK_NAMESPACE_NODE = 'tools';

const messageKey = (ns: string[], id: string) => `${ns.join('|')}#${id}`;

const attributedTo = (subagent: Subagent | undefined): { subagentRunId?: string } =>
  subagent ? { subagentRunId: subagent.subagentRunId } : {};

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

/**
 * The budget of a MESSAGES_SNAPSHOT's messages (their JSON bytes): the newest messages that fit go, older ones are left
 * out, so a long thread's snapshot stays far below the run-events ingest's 1 MiB message limit with room for the events
 * batched beside it.
 */
export const SNAPSHOT_BUDGET_BYTES = 256 * 1024;

const snapshotMessageOf = (message: BaseMessage, index: number): RunSnapshotMessage | undefined => {
  const id = message.id && message.id.length <= MAX_ID_LENGTH ? message.id : `message-${index}`;
  if (HumanMessage.isInstance(message)) return { id, role: 'user', content: textOf(message.content) };
  if (ToolMessage.isInstance(message)) {
    if (!message.tool_call_id || message.tool_call_id.length > MAX_ID_LENGTH) return undefined;
    return { id, role: 'tool', toolCallId: message.tool_call_id, content: textOf(message.content) };
  }
  if (AIMessage.isInstance(message) || AIMessageChunk.isInstance(message)) {
    const text = textOf(message.content);
    const toolCalls = (message.tool_calls ?? []).flatMap((call) =>
      call.id && call.id.length <= MAX_ID_LENGTH
        ? [{ id: call.id, type: 'function' as const, function: { name: call.name, arguments: JSON.stringify(isRecord(call.args) ? call.args : {}) } }]
        : [],
    );
    return { id, role: 'assistant', name: speakerNamed(message.name), ...(text ? { content: text } : {}), ...(toolCalls.length > 0 ? { toolCalls } : {}) };
  }
  return undefined;
};

/**
 * The thread's conversation for a MESSAGES_SNAPSHOT: the newest messages within `budgetBytes`, never a tool result
 * whose call was left out.
 */
export const snapshotMessages = (messages: readonly BaseMessage[], budgetBytes = SNAPSHOT_BUDGET_BYTES): RunSnapshotMessage[] => {
  const kept: RunSnapshotMessage[] = [];
  let bytes = 0;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const converted = snapshotMessageOf(messages[index], index);
    if (!converted) continue;
    bytes += Buffer.byteLength(JSON.stringify(converted));
    if (bytes > budgetBytes) break;
    kept.unshift(converted);
  }
  const calls = new Set(kept.flatMap((message) => (message.role === 'assistant' ? (message.toolCalls ?? []).map((call) => call.id) : [])));
  return kept.filter((message) => message.role !== 'tool' || calls.has(message.toolCallId));
};
