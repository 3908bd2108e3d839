import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { identityFromUserDetails, isMutatingEvent, type AgentCallScope, type AgentRuntimeContext, type AgentToolEvent, type AgentToolRequest, type AgentToolResult, type AnyAgentTool } from '@naalya/agent-tools';
import { fromServerDist, fromWorkerDist } from './stack.js';

/** What the model was told, in the battery's terms. */
export type OutcomeKind = 'ok' | 'refused' | 'unknown';

export type CallOutcome = {
  callId: string;
  tool: string;
  event: string;
  mutating: boolean;
  kind: OutcomeKind;
  /** The error text the model saw, if any. */
  error?: string;
  result: AgentToolResult;
  ms: number;
  /** Set by the phase: the key its effect probe counts this call's domain effect by (for example a unique name). */
  effectKey?: string;
};

// The worker's own modules from its dist (see fromWorkerDist): the caller is the worker's client code, not a copy.
type WorkerToolCaller = {
  readonly timeoutMs: number;
  call: (event: AgentToolEvent, payload: never) => Promise<AgentToolResult>;
  onModuleInit: () => Promise<void>;
  onModuleDestroy: () => Promise<void>;
};
type AgentToolServiceModule = {
  AgentToolService: new (options: { rabbitmqUrl: string; toolsQueue: string; timeoutMs: number }) => WorkerToolCaller;
  transportFailureMessage: (event: AgentToolEvent, failure: 'timeout' | 'unreachable', callId?: string) => string;
};
type BuildAgentToolsModule = {
  toRpcProxy: (definition: AnyAgentTool, caller: WorkerToolCaller) => { invoke: (args: unknown, runtime: unknown) => Promise<unknown> };
  toolCallIdempotencyKey: (threadId: string, toolCallId: string) => string;
};
type ToolContextModule = { callScopeFromContext: (context: AgentRuntimeContext) => AgentCallScope };
type ToolErrorModule = { OUTCOME_UNKNOWN_ERROR: string };

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
export const createToolCaller = async (options: { brokerUrl: string; toolsQueue: string; timeoutMs: number }): Promise<ToolCaller> => {
  const { AgentToolService, transportFailureMessage } = await fromWorkerDist<AgentToolServiceModule>('naalya-agent/core/tools/agent-tool.service.js');
  const { toRpcProxy, toolCallIdempotencyKey } = await fromWorkerDist<BuildAgentToolsModule>('naalya-agent/core/tools/build-agent-tools.js');
  const { callScopeFromContext } = await fromWorkerDist<ToolContextModule>('naalya-agent/core/tools/tool-context.js');
  const { OUTCOME_UNKNOWN_ERROR } = await fromServerDist<ToolErrorModule>('app/naalya-ai/tools/tool-error.js');
  // The worker's client logs a warning per failed call: thousands under faults, and the table says it better.
  Logger.overrideLogger(['error', 'fatal']);
  const service = new AgentToolService({ rabbitmqUrl: options.brokerUrl, toolsQueue: options.toolsQueue, timeoutMs: options.timeoutMs });
  await service.onModuleInit();

  // "Unknown" is anything that tells the model the platform could not say: the worker's transport sentences and the
  // server's unknown-commit sentence. Everything else with an error is a definite refusal.
  const classify = (tool: AnyAgentTool, callId: string, result: AgentToolResult, started: number): CallOutcome => {
    const event = tool.event as AgentToolEvent;
    const error = 'error' in result ? result.error : undefined;
    const transport = new Set([transportFailureMessage(event, 'timeout', callId), transportFailureMessage(event, 'unreachable', callId)]);
    const kind: OutcomeKind = error === undefined ? 'ok' : transport.has(error) || error === OUTCOME_UNKNOWN_ERROR ? 'unknown' : 'refused';
    return { callId, tool: tool.name, event, mutating: isMutatingEvent(event), kind, ...(error === undefined ? {} : { error }), result, ms: Date.now() - started };
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
