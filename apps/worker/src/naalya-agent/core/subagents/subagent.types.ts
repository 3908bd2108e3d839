import type { AgentRuntimeContext, AgentSpeaker } from '@naalya/agent-tools';
import type { SubAgent } from 'deepagents';
import type { AgentToolCaller } from '../tools/agent-tool-caller.js';

// Our own name for what selectSubagents returns: a deepagents SubAgent with explicit tools (a SubAgent
// without tools would inherit the middleware's defaults) and its own model.
export type DelegateSubAgent = SubAgent & { tools: NonNullable<SubAgent['tools']>; model: NonNullable<SubAgent['model']> };

// What the factories need besides the context and the caller. No filesystem backend: the specialists get
// no deepagents virtual-filesystem tools (createSubAgentMiddleware alone adds only the task tool), so a
// backend would have nothing to serve. Departs from the spec's deps.buildBackend(role) for that reason.
export type SubagentDeps = {
  /** A fresh model per speaker and turn: nothing is created at import time or shared across turns. */
  modelFor: (speaker: AgentSpeaker) => NonNullable<SubAgent['model']>;
};

export type SubagentFactory = (context: AgentRuntimeContext, toolCaller: AgentToolCaller, deps: SubagentDeps) => DelegateSubAgent;
