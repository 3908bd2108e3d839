import { agentRuntimeContextSchema, type AgentRuntimeContext } from '@naalya/agent-tools';
import type { BaseCheckpointSaver } from '@langchain/langgraph';
import { createSubAgentMiddleware } from 'deepagents';
import { createAgent } from 'langchain';
import { selectSubagents } from '../subagents/subagent-registry.js';
import type { SubagentDeps } from '../subagents/subagent.types.js';
import type { AgentToolCaller } from '../tools/agent-tool-caller.js';
import { buildAgentTools } from '../tools/build-agent-tools.js';
import { modelCallMiddleware, type UsageReporter } from './model-call.middleware.js';
import { roverSystemPrompt } from './rover.prompt.js';
import { stoppedToolCallsMiddleware } from './stopped-tool-calls.middleware.js';
import { tracingMiddleware } from './tracing.middleware.js';
import { untrustedReplyMiddleware } from './untrusted-reply.middleware.js';

export type RoverGraphDeps = SubagentDeps & {
  /** Required: without one, interrupt() inside a tool silently becomes a tool message (ecosystem 1.5). */
  checkpointer: BaseCheckpointSaver;
  /** Every model call's tokens, Rover's and the specialists', reported before its reply is acted on. */
  reportUsage: UsageReporter;
};

export const ROVER_AGENT_NAME = 'rover';

// Built per turn: the tools, the specialists and the models are made for this run step and dropped after it.
// The context still travels with every invoke or stream call (LangGraph does not persist it), and the
// contextSchema validates it there before the model runs.
export const createRoverGraph = (context: AgentRuntimeContext, toolCaller: AgentToolCaller, deps: RoverGraphDeps) => {
  const model = deps.modelFor('rover');
  const subagents = selectSubagents(context, toolCaller, deps);
  // Outermost first: the reply is made answerable after its usage was reported, and the usage is the provider's.
  // Tracing outermost: a chat span holds the model call and its usage report (an RPC of its own, same trace).
  const modelCalls = [tracingMiddleware(), untrustedReplyMiddleware(), modelCallMiddleware(deps.reportUsage)];
  return createAgent({
    name: ROVER_AGENT_NAME,
    model,
    tools: buildAgentTools(toolCaller, context.runMode.mode),
    systemPrompt: roverSystemPrompt(context),
    contextSchema: agentRuntimeContextSchema,
    checkpointer: deps.checkpointer,
    // Only the task tool: generalPurposeAgent false, and no filesystem middleware, so no tool reaches a
    // specialist except its own belt. Without eligible specialists there is no task tool at all. A run stopped mid-call
    // (cancelled, taken over) leaves a call with no result: the model is told so, or the next message would be refused.
    // The specialists' model calls go through the same model-call middleware as Rover's (defaultMiddleware).
    middleware: [
      stoppedToolCallsMiddleware(),
      ...(subagents.length > 0 ? [createSubAgentMiddleware({ defaultModel: model, subagents, generalPurposeAgent: false, defaultMiddleware: modelCalls })] : []),
      ...modelCalls,
    ],
  });
};

export type RoverGraph = ReturnType<typeof createRoverGraph>;
