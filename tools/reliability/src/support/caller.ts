import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import {
  OUTCOME_UNKNOWN_CODES,
  identityFromUserDetails,
  isMutatingEvent,
  type AgentRuntimeContext,
  type AgentToolEvent,
  type AgentToolRequest,
  type AgentToolResult,
  type AnyAgentTool,
  type ToolErrorCode,
} from '@naalya/agent-tools';
import { AgentToolService, callScopeFromContext, toRpcProxy, toolCallIdempotencyKey } from '@naalya/worker/testing';

/** What the model was told, in the battery's terms. */
export type OutcomeKind = 'ok' | 'refused' | 'unknown';

export type CallOutcome = {
  callId: string;
  tool: string;
  event: string;
  mutating: boolean;
  kind: OutcomeKind;
  /** The error text the model saw, if any, and the code that tells its kind. */
  error?: string;
  code?: ToolErrorCode;
  result: AgentToolResult;
  ms: number;
  /** Set by the phase: the key its effect probe counts this call's domain effect by (for example a unique name). */
  effectKey?: string;
  /** Other call ids this one call went out under (only a caller weakened to re-send under new ids has any). */
  sentAs?: string[];
};

/**
 * A caller with the worker's protection switched off, for a sabotage test: 'new-call-id-per-resend' sends a lost call
 * again as the worker does, but under a fresh call id each time, as a retry without the ledger's key would.
 */
export type CallerWeakening = 'new-call-id-per-resend';

const UNKNOWN_CODES: ReadonlySet<ToolErrorCode> = new Set(OUTCOME_UNKNOWN_CODES);

export type ToolCaller = {
  readonly timeoutMs: number;
  /** As the model triggers it: the worker's generic proxy with a runtime context the server minted. */
  call: (tool: AnyAgentTool, args: Record<string, unknown>, context: AgentRuntimeContext, options?: { toolCallId?: string }) => Promise<CallOutcome>;
  /** One envelope as built, sent as is (duplicate deliveries of one call id, or a call the proxy would not build). */
  send: (tool: AnyAgentTool, request: AgentToolRequest<unknown>) => Promise<CallOutcome>;
  /** The envelope the proxy would send for this call, so a phase can send it again. */
  envelope: (tool: AnyAgentTool, args: Record<string, unknown>, context: AgentRuntimeContext, callId?: string) => AgentToolRequest<unknown>;
  close: () => Promise<void>;
};

/**
 * A caller that publishes as the worker does: the worker's AgentToolService and toRpcProxy from the built worker, on
 * the worker's broker user, with its timeout and expiration. Every outcome is classified as the model would read it.
 */
export const createToolCaller = async (options: { brokerUrl: string; toolsQueue: string; timeoutMs: number; weakening?: CallerWeakening }): Promise<ToolCaller> => {
  // The worker's client logs a warning per failed call: thousands under faults, and the table says it better.
  Logger.overrideLogger(['error', 'fatal']);
  const service = new AgentToolService({ rabbitmqUrl: options.brokerUrl, toolsQueue: options.toolsQueue, timeoutMs: options.timeoutMs });
  const sentAs = options.weakening === 'new-call-id-per-resend' ? renameResends(service) : undefined;
  await service.onModuleInit();

  // "Unknown" is anything that tells the model the platform could not say: the worker's transport failures and the
  // server's unknown commit. Everything else with an error is a definite refusal.
  const classify = (tool: AnyAgentTool, callId: string, result: AgentToolResult, started: number): CallOutcome => {
    const event = tool.event as AgentToolEvent;
    const failure = 'error' in result ? { error: result.error, code: result.code } : undefined;
    const kind: OutcomeKind = failure === undefined ? 'ok' : UNKNOWN_CODES.has(failure.code) ? 'unknown' : 'refused';
    const others = sentAs?.get(callId);
    sentAs?.delete(callId);
    return { callId, tool: tool.name, event, mutating: isMutatingEvent(event), kind, ...failure, result, ms: Date.now() - started, ...(others ? { sentAs: others } : {}) };
  };

  // What toRpcProxy builds, from the same helpers, for phases that must send one envelope more than once.
  const envelope: ToolCaller['envelope'] = (_tool, args, context, callId = randomUUID()) => ({
    identity: identityFromUserDetails(context.userDetails),
    scope: callScopeFromContext(context),
    args,
    meta: { callId, deadline: Date.now() + options.timeoutMs, dispatchToken: context.dispatchToken },
  });

  return {
    timeoutMs: options.timeoutMs,
    call: async (tool, args, context, callOptions = {}) => {
      const toolCallId = callOptions.toolCallId ?? `rel-${randomUUID()}`;
      const started = Date.now();
      const output = await toRpcProxy(tool, service).invoke(args, {
        context,
        toolCallId,
        writer: null,
        configurable: { thread_id: context.run.threadId },
      });
      return classify(tool, toolCallIdempotencyKey(context.run.threadId, toolCallId), JSON.parse(String(output)) as AgentToolResult, started);
    },
    send: async (tool, request) => {
      const started = Date.now();
      const result = await service.call(tool.event as AgentToolEvent, request as never);
      return classify(tool, request.meta.callId, result, started);
    },
    envelope,
    close: () => service.onModuleDestroy(),
  };
};

type RpcCall = (pattern: string, data: unknown, timeoutMs: number, options?: { correlationId?: string }) => Promise<unknown>;

/**
 * The sabotage of 'new-call-id-per-resend', on this one service's RPC client (a private field of the built worker's
 * class: nothing in production can switch this): every send after a call's first (the same correlation id again)
 * carries a fresh call id. Returns the ids each call went out under besides its own, by its own.
 */
const renameResends = (service: AgentToolService): Map<string, string[]> => {
  const client = (service as unknown as { client: { call: RpcCall } }).client;
  const original = client.call.bind(client);
  const seen = new Set<string>();
  const renamed = new Map<string, string[]>();
  client.call = (pattern, data, timeoutMs, callOptions) => {
    const key = callOptions?.correlationId;
    if (key === undefined || !seen.has(key)) {
      if (key !== undefined) seen.add(key);
      return original(pattern, data, timeoutMs, callOptions);
    }
    const request = data as AgentToolRequest<unknown>;
    const fresh = `rel-resent-${randomUUID()}`;
    renamed.set(request.meta.callId, [...(renamed.get(request.meta.callId) ?? []), fresh]);
    return original(pattern, { ...request, meta: { ...request.meta, callId: fresh } }, timeoutMs, callOptions);
  };
  return renamed;
};
