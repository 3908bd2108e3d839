import { z } from 'zod';
import { RUN_ERROR_CODES } from './agent-errors.js';
import { AGENT_SPEAKERS, agentInterruptSchema, runUsageSchema, type AgentInterrupt } from './agent-run.js';
import { confirmationSchema } from './confirmation.js';

const id = z.string().min(1).max(100);

/**
 * Every run event carries the run and thread it belongs to (extra fields are allowed by AG-UI on every event): the
 * ingest routes and checks by them, and a client following several runs tells them apart.
 */
const base = {
  runId: id,
  threadId: id,
  /** When the worker (or the server) produced the event, in ms since the epoch: AG-UI's `timestamp`. */
  timestamp: z.number().int().nonnegative().optional(),
};

/**
 * An AG-UI `subagentRunId`: the events a specialist produces carry the id of its invocation, opened by
 * SUBAGENT_STARTED (which names the specialist) and closed by SUBAGENT_FINISHED. Rover's own events carry none.
 */
const attributed = { subagentRunId: id.optional() };

/** Why a run is paused: an ask_user `question`, or the `confirmation` asked before a tool whose definition has `confirm`. */
export const RUN_INTERRUPT_REASONS = ['question', 'confirmation'] as const;
export type RunInterruptReason = (typeof RUN_INTERRUPT_REASONS)[number];

/**
 * A pending question or confirmation as AG-UI 1.0's `Interrupt`: `message` is the question, `reason` its kind,
 * `expiresAt` when the server stops waiting (stamped by the server as it stores the event), and `metadata` what is ours:
 * who asked, the sha256 fingerprint of the arguments (of the ask_user call, or of the call being confirmed), and for a
 * confirmation the call it approves (event, idempotency call id, arguments), the current values of the arguments the
 * person may edit, and after an edit what they changed.
 */
export const runInterruptSchema = z.strictObject({
  id,
  reason: z.enum(RUN_INTERRUPT_REASONS),
  message: z.string(),
  toolCallId: id.optional(),
  expiresAt: z.iso.datetime({ offset: true }).optional(),
  responseSchema: z.strictObject({ type: z.literal('string'), maxLength: z.number().int().positive() }),
  ...attributed,
  metadata: z.strictObject({
    askedBy: z.enum(AGENT_SPEAKERS),
    argsHash: z.string().optional(),
    confirmation: confirmationSchema.optional(),
  }),
});
export type RunInterrupt = z.infer<typeof runInterruptSchema>;

/** The longest answer a question takes (the resume request's bound). */
export const RUN_ANSWER_MAX_LENGTH = 4_000;

/** An ask_user question or a confirmation, as the AG-UI interrupt a RUN_FINISHED carries. */
export const toRunInterrupt = (interrupt: AgentInterrupt, subagentRunId?: string): RunInterrupt => ({
  id: interrupt.interruptId,
  reason: interrupt.confirmation ? 'confirmation' : 'question',
  message: interrupt.question,
  ...(interrupt.toolCallId ? { toolCallId: interrupt.toolCallId } : {}),
  responseSchema: { type: 'string', maxLength: RUN_ANSWER_MAX_LENGTH },
  ...(subagentRunId ? { subagentRunId } : {}),
  metadata: {
    askedBy: interrupt.askedBy,
    ...(interrupt.argsHash ? { argsHash: interrupt.argsHash } : {}),
    ...(interrupt.confirmation ? { confirmation: interrupt.confirmation } : {}),
  },
});

/** The interrupt as the server keeps it with its run (and as the REST views show it). */
export const fromRunInterrupt = (interrupt: RunInterrupt): AgentInterrupt =>
  agentInterruptSchema.parse({
    interruptId: interrupt.id,
    question: interrupt.message,
    askedBy: interrupt.metadata.askedBy,
    ...(interrupt.toolCallId ? { toolCallId: interrupt.toolCallId } : {}),
    ...(interrupt.metadata.argsHash ? { argsHash: interrupt.metadata.argsHash } : {}),
    ...(interrupt.metadata.confirmation ? { confirmation: interrupt.metadata.confirmation } : {}),
  });

const committedWriteSchema = z.strictObject({ callId: id, event: z.string(), auditId: z.string().nullable() });

/** A message of the conversation as AG-UI's MESSAGES_SNAPSHOT carries it (the roles we have). */
export const runSnapshotMessageSchema = z.discriminatedUnion('role', [
  z.strictObject({ id, role: z.literal('user'), content: z.string() }),
  z.strictObject({
    id,
    role: z.literal('assistant'),
    name: z.enum(AGENT_SPEAKERS).optional(),
    content: z.string().optional(),
    toolCalls: z
      .array(z.strictObject({ id, type: z.literal('function'), function: z.strictObject({ name: z.string(), arguments: z.string() }) }))
      .optional(),
  }),
  z.strictObject({ id, role: z.literal('tool'), toolCallId: id, content: z.string() }),
]);
export type RunSnapshotMessage = z.infer<typeof runSnapshotMessageSchema>;

/**
 * The run events: AG-UI 1.0 events (https://docs.ag-ui.com), the subset a run of ours produces, each a strict object so
 * nothing private travels unnoticed; what AG-UI has no event for goes as CUSTOM. Text and tool arguments stream as
 * deltas (TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS) as the model produces them. The worker publishes them in batches
 * (RunEventBatch) on the run events topic exchange with the run id as routing key; the server numbers them (seq, the SSE
 * id) as it stores them. RUN_STARTED opens each step; RUN_FINISHED (success, interrupt, cancelled) or RUN_ERROR ends it.
 */
export const agentRunEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ ...base, type: z.literal('RUN_STARTED') }),
  z.strictObject({
    ...base,
    type: z.literal('SUBAGENT_STARTED'),
    subagentRunId: id,
    /** The specialist's role. */
    name: z.enum(AGENT_SPEAKERS),
    /** Rover's `task` call that handed the work over. */
    parentToolCallId: id.optional(),
  }),
  z.strictObject({
    ...base,
    type: z.literal('SUBAGENT_FINISHED'),
    subagentRunId: id,
    outcome: z.discriminatedUnion('type', [
      z.strictObject({ type: z.literal('success') }),
      z.strictObject({ type: z.literal('suspended'), interruptIds: z.array(id) }),
    ]),
  }),
  z.strictObject({
    ...base,
    ...attributed,
    type: z.literal('TEXT_MESSAGE_START'),
    messageId: id,
    role: z.literal('assistant'),
    /** Who speaks: Rover, or the specialist whose subagentRunId the event carries. */
    name: z.enum(AGENT_SPEAKERS),
  }),
  z.strictObject({ ...base, ...attributed, type: z.literal('TEXT_MESSAGE_CONTENT'), messageId: id, delta: z.string().min(1) }),
  z.strictObject({ ...base, ...attributed, type: z.literal('TEXT_MESSAGE_END'), messageId: id }),
  z.strictObject({
    ...base,
    ...attributed,
    type: z.literal('TOOL_CALL_START'),
    toolCallId: id,
    toolCallName: z.string().min(1).max(100),
    parentMessageId: id.optional(),
    /** The RabbitMQ event for RPC tools; absent for local tools. */
    metadata: z.strictObject({ event: z.string().min(1).max(100) }).optional(),
  }),
  /** A fragment of the call's arguments as JSON text; the fragments of one call concatenate to its arguments object. */
  z.strictObject({ ...base, ...attributed, type: z.literal('TOOL_CALL_ARGS'), toolCallId: id, delta: z.string().min(1) }),
  z.strictObject({ ...base, ...attributed, type: z.literal('TOOL_CALL_END'), toolCallId: id }),
  z.strictObject({
    ...base,
    ...attributed,
    type: z.literal('TOOL_CALL_RESULT'),
    messageId: id,
    toolCallId: id,
    role: z.literal('tool'),
    /** The tool's JSON result: { data, scopeContext, auditId? } or { error, code }. */
    content: z.string(),
    /** How long the hop to the server took, for RPC tools. */
    metadata: z.strictObject({ hopMs: z.number().nonnegative() }).optional(),
  }),
  /** The conversation so far, sent before a run pauses, so a client that joins late renders it whole. */
  z.strictObject({ ...base, type: z.literal('MESSAGES_SNAPSHOT'), messages: z.array(runSnapshotMessageSchema) }),
  z.strictObject({ ...base, ...attributed, type: z.literal('CUSTOM'), name: z.string().min(1).max(100), value: z.record(z.string(), z.unknown()) }),
  z.strictObject({
    ...base,
    type: z.literal('RUN_FINISHED'),
    /** `cancelled` is written by the server alone, when the run's owner stops it. */
    outcome: z.discriminatedUnion('type', [
      z.strictObject({ type: z.literal('success') }),
      z.strictObject({ type: z.literal('interrupt'), interrupts: z.array(runInterruptSchema).min(1) }),
      z.strictObject({ type: z.literal('cancelled') }),
    ]),
    /**
     * `committedWrites` on `cancelled`: the writes the run committed before it was stopped (they stay). `usage`: the
     * run's model tokens so far, as the server counted them from the worker's usage reports (the server sets it).
     */
    metadata: z.strictObject({ committedWrites: z.array(committedWriteSchema).optional(), usage: runUsageSchema.optional() }).optional(),
  }),
  z.strictObject({ ...base, type: z.literal('RUN_ERROR'), message: z.string(), code: z.enum(RUN_ERROR_CODES) }),
]);
export type AgentRunEvent = z.infer<typeof agentRunEventSchema>;
export type AgentRunEventType = AgentRunEvent['type'];

/** The most events one batch message carries; the worker starts a new message beyond it. */
export const RUN_EVENT_BATCH_MAX = 500;

/**
 * One message on the run events exchange: the events a step produced since its previous message, in order, all of one
 * run. The server stores a batch in one transaction (each event numbered, the batch's message id keying them so a
 * redelivery stores nothing twice), so streaming does not cost one transaction per token.
 */
export const runEventBatchSchema = z.strictObject({ events: z.array(agentRunEventSchema).min(1).max(RUN_EVENT_BATCH_MAX) });
export type RunEventBatch = z.infer<typeof runEventBatchSchema>;

/** The events on which AG-UI itself defines `runId` and `threadId`. */
const RUN_SCOPED_TYPES: ReadonlySet<AgentRunEventType> = new Set(['RUN_STARTED', 'RUN_FINISHED']);

type StreamedEvent<E> = E extends { type: 'RUN_STARTED' | 'RUN_FINISHED' } ? E : Omit<E, 'runId' | 'threadId'>;

/**
 * A run event as a client receives it over SSE: exactly AG-UI's shape, with `runId` and `threadId` only where AG-UI
 * defines them (RUN_STARTED, RUN_FINISHED). Between the worker and the server every event carries both, so the ingest
 * can check each against its run; a client knows the run from the stream it opened.
 */
export type RunStreamEvent = StreamedEvent<AgentRunEvent>;

/** What a client checks a streamed event against: the same strict events, without the ids AG-UI does not define there. */
export const runStreamEventSchema = z.discriminatedUnion(
  'type',
  agentRunEventSchema.options.map((option: z.ZodObject<{ type: z.ZodLiteral<AgentRunEventType> } & z.ZodRawShape>) =>
    RUN_SCOPED_TYPES.has(option.shape.type.value) ? option : option.omit({ runId: true, threadId: true }),
  ) as unknown as typeof agentRunEventSchema.options,
) as unknown as z.ZodType<RunStreamEvent>;

export const toRunStreamEvent = (event: AgentRunEvent): RunStreamEvent => {
  if (RUN_SCOPED_TYPES.has(event.type)) return event as RunStreamEvent;
  const { runId: _runId, threadId: _threadId, ...rest } = event;
  return rest as RunStreamEvent;
};
