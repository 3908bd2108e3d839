import type { AgentToolEvent, AgentToolPayload, AgentToolResult } from '@naalya/agent-tools';

// The port between the tool proxies and the transport. An implementation answers every call with a
// result, never a throw: semantic errors come back from the server as { error }, and transport
// failures are mapped to a non-retryable { error } by the adapter.
export type AgentToolCaller = {
  // How long one call may take; the proxy stamps meta.deadline with it so the server's refusal of
  // late calls and the adapter's timeout agree.
  readonly timeoutMs: number;
  call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult>;
};

export const AGENT_TOOL_CALLER = Symbol('AgentToolCaller');
