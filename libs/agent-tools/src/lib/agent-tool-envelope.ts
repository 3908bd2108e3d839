import { USER_TYPES } from '@naalya/access';
import { z } from 'zod';
import type { ToolErrorCode } from './agent-errors.js';
import type { AgentIdentity } from './agent-runtime-context.js';

const id = z.string().min(1).max(100);

/** Where a call runs: the whole school (a platform admin's write names its target school) or one campus. */
export type AgentCallScope =
  | { mode: 'school'; targetSchoolId?: string }
  | { mode: 'campus'; campusId: string };

/**
 * Per-call facts the proxy adds: an idempotency key stable across resumes, an epoch-ms deadline, and the
 * dispatch token the server minted for the run (copied from the runtime context; the server refuses a call without a valid one).
 */
export type AgentToolMeta = {
  callId: string;
  deadline: number;
  dispatchToken?: string;
  /**
   * Set on the read a confirmable tool's proxy sends before it asks the user: the server runs the call's own checks
   * and gate, renders the confirmation question from the records instead of running the call, and writes nothing.
   */
  preview?: true;
};

/** What a preview answers with: the confirmation question, written from the records as the caller may see them. */
export type ConfirmationPreview = { question: string };

/** The question of a preview's data, or undefined when it holds none; the worker's proxy and the MCP door both ask it. */
export const previewQuestion = (data: unknown): string | undefined => {
  const question = (data as { question?: unknown } | null)?.question;
  return typeof question === 'string' && question.length > 0 ? question : undefined;
};

/** What crosses RabbitMQ for one tool call. */
export type AgentToolRequest<A = unknown> = {
  identity: AgentIdentity;
  scope: AgentCallScope;
  args: A;
  meta: AgentToolMeta;
};

/**
 * The one builder of a tool call's envelope, for the worker's proxy and the MCP door alike. The deadline is taken at
 * each send (a confirmation may have waited for the person); the dispatch token is the server's proof of what it
 * minted for the run (without it the server runs nothing); `preview` asks for the confirmation question instead of the
 * call (its checks and gate, nothing written).
 */
export const toolRequestOf = <A>(call: {
  identity: AgentIdentity;
  scope: AgentCallScope;
  args: A;
  callId: string;
  timeoutMs: number;
  dispatchToken?: string;
  preview?: boolean;
}): AgentToolRequest<A> => ({
  identity: call.identity,
  scope: call.scope,
  args: call.args,
  meta: {
    callId: call.callId,
    deadline: Date.now() + call.timeoutMs,
    ...(call.dispatchToken ? { dispatchToken: call.dispatchToken } : {}),
    ...(call.preview ? { preview: true as const } : {}),
  },
});

/** A call's answer: data with a sentence on its reach, or a model-readable error with the code that tells its kind. */
export type AgentToolResult<T = unknown> =
  | { data: T; scopeContext: string; auditId?: string; userEdited?: UserEdited }
  | AgentToolError;

/**
 * Added by the worker to the result of a confirmed call the person edited before approving, so the model is told what
 * ran: the arguments they changed and the values that ran.
 */
export type UserEdited = { note: string; fields: string[]; ran: Record<string, unknown> };

export type AgentToolError = { error: string; code: ToolErrorCode };

/** The strict shape of an envelope: typed identity with nothing extra, scope and meta. Args are parsed by the tool's schema. */
export const agentToolRequestSchema = z.strictObject({
  identity: z.strictObject({
    sub: id,
    type: z.enum(USER_TYPES),
    schoolId: id.nullable(),
    campusId: id.nullable(),
  }),
  scope: z.discriminatedUnion('mode', [
    z.strictObject({ mode: z.literal('school'), targetSchoolId: id.optional() }),
    z.strictObject({ mode: z.literal('campus'), campusId: id }),
  ]),
  args: z.unknown(),
  meta: z.strictObject({
    callId: z.string().min(8).max(128),
    deadline: z.number().int().positive(),
    dispatchToken: z.string().min(1).max(4096).optional(),
    preview: z.literal(true).optional(),
  }),
});
