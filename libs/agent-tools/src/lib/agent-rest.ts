import type { AgentSpeaker, RunUsage } from './agent-run.js';

/**
 * What the conversation routes (/agent/threads...) answer, as JSON: the server's controllers return these, the Hub and
 * the chat client read them. Times are ISO 8601 strings. GET /agent/map is AgentMap (agent-roster).
 */

/**
 * `queued`: waiting for the thread's active run to end (multitaskStrategy `enqueue`). `running` and `interrupted` (waiting
 * for an answer) hold the thread. `finished`, `failed` and `cancelled` are final; the server decides all of them.
 */
export const AGENT_RUN_STATUSES = ['queued', 'running', 'interrupted', 'finished', 'failed', 'cancelled'] as const;
export type AgentRunStatus = (typeof AGENT_RUN_STATUSES)[number];

/** Statuses a run never leaves. */
export const FINAL_RUN_STATUSES: readonly AgentRunStatus[] = ['finished', 'failed', 'cancelled'];

/**
 * What POST /agent/threads/:id/runs does when the thread already has an active run: `reject` (409, the default),
 * `enqueue` (the new run starts when the active one ends; a bounded queue per thread) or `interrupt` (cancel the active
 * run, then start). A pending question blocks new input unless the strategy is `interrupt`.
 */
export const MULTITASK_STRATEGIES = ['reject', 'enqueue', 'interrupt'] as const;
export type MultitaskStrategy = (typeof MULTITASK_STRATEGIES)[number];

/** `agent`: a conversation step run by a worker under a lease. `direct`: a session of direct tool calls (no worker). */
export type AgentRunKind = 'agent' | 'direct';

/** POST /agent/threads/:id/runs. */
export type StartRunRequest = { message: string; campusId?: string; targetSchoolId?: string; multitaskStrategy?: MultitaskStrategy };

/** A write a run committed: reported by a cancel, since a committed write stays. */
export type CommittedWrite = { callId: string; event: string; auditId: string | null };

/** POST /agent/threads/:id/runs/:runId/cancel. Idempotent: a run that had already ended answers `cancelled: false`. */
export type CancelRunResponse = { runId: string; status: AgentRunStatus; cancelled: boolean; committedWrites: CommittedWrite[] };

/** POST /agent/threads, and each row of GET /agent/threads. */
export type ThreadSummary = { id: string; title: string | null; createdAt: string; updatedAt: string };

/** What a client sees of a question: `confirm` marks a confirmation of one tool call, which only a yes approves. */
export type InterruptView = {
  interruptId: string;
  question: string;
  askedBy: AgentSpeaker;
  answered: boolean;
  confirm?: true;
  /** When an unanswered question stops waiting: the server then ends its run (QUESTION_EXPIRED). */
  expiresAt: string | null;
  /** Set when the run was cancelled or expired before the question was answered. */
  voided?: true;
};

export type RunSummary = {
  id: string;
  kind: AgentRunKind;
  status: AgentRunStatus;
  message: string;
  campusId: string | null;
  targetSchoolId: string | null;
  interrupts: InterruptView[];
  error: string | null;
  /** The code of `error` (a RUN_ERROR code), so a client tells a failure's kind without reading English. */
  errorCode: string | null;
  lastSeq: number;
  /** The run's language model tokens so far, as the server counted them from the worker's usage reports. */
  usage: RunUsage;
  /** The OpenTelemetry trace the run started in (32 hex digits), to find it in a tracing backend; null with tracing off. */
  traceId: string | null;
  createdAt: string;
  updatedAt: string;
};

/** GET /agent/threads/:id. */
export type ThreadDetail = ThreadSummary & { runs: RunSummary[] };

/** POST /agent/threads/:id/runs: `queued` under `enqueue` while another run is active. */
export type StartRunResponse = {
  runId: string;
  status: 'running' | 'queued';
  /** The trace this request, and the run it started, belong to: only when the server traces (OTEL_EXPORTER_OTLP_ENDPOINT). */
  traceId?: string;
};

/**
 * POST /agent/threads/:id/resume's body. `edits`, only on a confirmation whose tool lists those arguments as editable
 * (its definition's `confirm.editable`): the person's new values (null unsets an optional one). The edited call is not
 * approved by this answer: the server checks the edits with the tool's schema (400 INVALID_ARGUMENTS or EDIT_NOT_ALLOWED
 * otherwise, and the question stays pending) and the question is asked again about the edited call (`confirmation.edited`).
 */
export type ResumeRequest = { interruptId: string; answer: string; edits?: Record<string, unknown> };

/** POST /agent/threads/:id/resume: the run resumes once every pending question is answered. */
export type ResumeResponse = {
  runId: string;
  resumed: boolean;
  pendingInterruptIds: string[];
  /** The trace of this answer and of the step it resumes (its approval row carries it too); only when the server traces. */
  traceId?: string;
};

/**
 * GET and PUT /platform/schools/:schoolId/model-policy (platform administrators only): a school's data choice, which
 * language models may see its data, and its daily token budget. `allowedModels`: null for the platform's default,
 * `["*"]` for every model, `[]` for none but the scripted and self-hosted models (always allowed), else entries
 * `provider` or `provider:model`. `dailyTokenBudget`: null for the platform's default. PUT takes both fields and
 * answers this; `effective` is what applies now, `tokensToday` what the school used this UTC day.
 */
export type SchoolModelPolicy = {
  schoolId: string;
  allowedModels: string[] | null;
  dailyTokenBudget: number | null;
  effective: { allowedModels: string[]; dailyTokenBudget: number | null };
  tokensToday: number;
};
