import { z } from 'zod';
import { agentRuntimeContextSchema } from './agent-runtime-context.js';
import { AGENT_TOOL_ROLES } from './agent-tool-role.js';
import { confirmationSchema, runAnswerSchema } from './confirmation.js';

const id = z.string().min(1).max(100);

/** The Nest pattern of a run step on the runs queue (`client.emit(AGENT_RUN_PATTERN, request)`). */
export const AGENT_RUN_PATTERN = 'agent.run';

/**
 * The Nest pattern of a deleted thread on the runs queue: the server publishes it (signed like a run step) once the
 * thread's rows are gone, and a worker deletes the thread's checkpoints, which live in the worker's checkpoint database
 * where the server has no access.
 */
export const AGENT_THREAD_DELETED_PATTERN = 'agent.thread.deleted';
export const agentThreadDeletedSchema = z.strictObject({ threadId: z.guid() });
export type AgentThreadDeleted = z.infer<typeof agentThreadDeletedSchema>;

/** Who speaks or asks: Rover, or one of the specialists. */
export const AGENT_SPEAKERS = ['rover', ...AGENT_TOOL_ROLES] as const;
export type AgentSpeaker = (typeof AGENT_SPEAKERS)[number];

/**
 * What the server publishes on the runs queue for one run step: a new user message, or answers to
 * pending ask_user questions. The context is minted by the server and is the worker's only source of
 * identity and scope; it is sent again on every step (LangGraph does not persist it).
 */
export const agentRunRequestSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('start'),
    context: agentRuntimeContextSchema,
    message: z.string().min(1).max(4_000),
  }),
  z.strictObject({
    kind: z.literal('resume'),
    context: agentRuntimeContextSchema,
    /**
     * Answers keyed by interrupt id; several questions may be pending at once. A confirmation's answer may be an edit
     * of its arguments instead of a text (the worker asks about the edited call again).
     */
    answers: z.record(id, runAnswerSchema),
  }),
]);
export type AgentRunRequest = z.infer<typeof agentRunRequestSchema>;

/**
 * What a paused tool hands to LangGraph's interrupt(): an ask_user question, or the confirmation the RPC proxy asks
 * before a tool whose definition has `confirm`.
 */
export const agentInterruptValueSchema = z.strictObject({
  question: z.string(),
  askedBy: z.enum(AGENT_SPEAKERS),
  /**
   * The tool call that asked, and the sha256 of its canonical arguments: for ask_user, so an answer binds to exactly
   * this question; for a confirmation, the arguments of the call being confirmed.
   */
  toolCallId: id.optional(),
  argsHash: z.string().optional(),
  /** Present on a confirmation: the call it is about, its editable arguments, and the edits it was asked again after. */
  confirmation: confirmationSchema.optional(),
});
export type AgentInterruptValue = z.infer<typeof agentInterruptValueSchema>;

/** A pending question or confirmation, attributed to whoever asked it. */
export const agentInterruptSchema = agentInterruptValueSchema.extend({ interruptId: id });
export type AgentInterrupt = z.infer<typeof agentInterruptSchema>;

/**
 * The AMQP header every run event travels with: the dispatch token of the step that produced it. The server stores an
 * event only while its run is running under that token's epoch, so a step it has taken back writes nothing.
 */
export const DISPATCH_TOKEN_HEADER = 'x-dispatch-token';

/**
 * The run lease, over the tools queue as an RPC (the worker must know the answer before it calls the model): `claim`
 * before a step runs, `renew` every third of the lease while it runs, `release` when it is done. The server reads the
 * run, its epoch and its caller from the dispatch token alone; `workerId` names the claimant.
 */
export const AGENT_RUN_LEASE_PATTERN = 'agent.run.lease';

/**
 * The language model a worker would send the run's data to, as it names itself on a claim. The server checks it
 * against the school's data choice before granting the step, so a school that has not allowed this model has nothing
 * sent to it. `selfHosted`: the worker reaches the provider's API at AGENT_MODEL_BASE_URL (a school's or the platform's
 * own server, or the simulator), not the provider's cloud.
 */
export const agentModelIdentitySchema = z.strictObject({
  /** "scripted", or "provider:model" as AGENT_MODEL names it. */
  model: z.string().min(1).max(200),
  selfHosted: z.boolean(),
});
export type AgentModelIdentity = z.infer<typeof agentModelIdentitySchema>;

export const agentRunLeaseRequestSchema = z.strictObject({
  action: z.enum(['claim', 'renew', 'release']),
  workerId: z.string().min(1).max(200),
  dispatchToken: z.string().min(1).max(8_000),
  /** Sent with every claim; a claim without it is refused (`model_not_allowed`) unless the school allows every model. */
  model: agentModelIdentitySchema.optional(),
});
export type AgentRunLeaseRequest = z.infer<typeof agentRunLeaseRequestSchema>;

/**
 * Why a lease is refused: `superseded` (the step was dispatched again, or another worker holds it), `cancelled` (its
 * owner stopped the run), `ended` (the run is no longer running), `refused` (the token is not the server's),
 * `model_not_allowed` (the school's data choice forbids the claimant's model; the server has failed the run with
 * MODEL_NOT_ALLOWED), `token_budget_spent` (the school's daily token budget is spent; failed SCHOOL_TOKEN_BUDGET_SPENT).
 */
export const LEASE_REFUSALS = ['superseded', 'cancelled', 'ended', 'refused', 'model_not_allowed', 'token_budget_spent'] as const;
export type LeaseRefusal = (typeof LEASE_REFUSALS)[number];

export const agentRunLeaseReplySchema = z.discriminatedUnion('granted', [
  z.strictObject({ granted: z.literal(true), leaseMs: z.number().int().positive() }),
  z.strictObject({ granted: z.literal(false), reason: z.enum(LEASE_REFUSALS) }),
]);
export type AgentRunLeaseReply = z.infer<typeof agentRunLeaseReplySchema>;

/** Model tokens, input and output, as a provider's usage data reports them. */
export const runUsageSchema = z.strictObject({
  inputTokens: z.number().int().nonnegative().max(100_000_000),
  outputTokens: z.number().int().nonnegative().max(100_000_000),
});
export type RunUsage = z.infer<typeof runUsageSchema>;

/**
 * The usage report, over the tools queue as an RPC like the lease: after every model call of a run step the worker
 * reports the call's tokens and waits for the answer before it acts on the model's reply. The server adds them to the
 * run, to the run step and to the school's day (in PostgreSQL, so every replica counts the same day), and answers
 * whether the step may go on: a run that crossed the school's daily budget, or its step's budget, ends after this call
 * (the server fails it and takes its lease back, so a worker that goes on anyway is refused at its next call).
 */
export const AGENT_RUN_USAGE_PATTERN = 'agent.run.usage';

export const agentRunUsageRequestSchema = z.strictObject({
  workerId: z.string().min(1).max(200),
  dispatchToken: z.string().min(1).max(8_000),
  /** The model that spent them ("provider:model" or "scripted"). */
  model: z.string().min(1).max(200),
  usage: runUsageSchema,
});
export type AgentRunUsageRequest = z.infer<typeof agentRunUsageRequestSchema>;

/** Why a step may not go on after a usage report: the reasons a lease is refused, and the step's own token budget. */
export const USAGE_STOPS = [...LEASE_REFUSALS, 'step_token_budget_spent'] as const;
export type UsageStop = (typeof USAGE_STOPS)[number];

export const agentRunUsageReplySchema = z.discriminatedUnion('proceed', [
  /** `run`: the run's totals after this report. */
  z.strictObject({ proceed: z.literal(true), run: runUsageSchema }),
  z.strictObject({ proceed: z.literal(false), reason: z.enum(USAGE_STOPS), run: runUsageSchema.optional() }),
]);
export type AgentRunUsageReply = z.infer<typeof agentRunUsageReplySchema>;
