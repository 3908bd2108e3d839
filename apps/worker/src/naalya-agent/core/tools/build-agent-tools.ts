import { hash } from 'node:crypto';
import {
  ERROR_SENTENCES,
  MAX_EDITS_PER_CALL,
  RPC_AGENT_TOOLS,
  changedFields,
  editableValues,
  isApprovalAnswer,
  isConfirmationEdit,
  toolRequestOf,
  withUserEdits,
  toolsForMode,
  toolError,
  toolsForRole,
  type AgentInterruptValue,
  type AgentRunModeName,
  type AgentSpeaker,
  type AgentToolEvent,
  type AgentToolRole,
  type AnyAgentTool,
  previewQuestion,
  withoutEmDash,
} from '@naalya/agent-tools';
import { interrupt } from '@langchain/langgraph';
import { DynamicStructuredTool, type ToolRuntime } from 'langchain';
import type { z } from 'zod';
import type { AgentToolCaller } from './agent-tool-caller.js';
import { argsHash } from './args-hash.js';
import { agentMapTool } from './local/agent-map.tool.js';
import { createAskUserTool } from './local/ask-user.tool.js';
import { clockTool } from './local/clock.tool.js';
import { resolveCallScope, resolveIdentity, resolveRuntimeContext } from './tool-context.js';

// A last pass over agent-facing copy, shared with the MCP door's confirmation questions.
export { withoutEmDash };

// Stable when a checkpoint resume replays the same tool call (same thread, same tool call id), so the
// server's idempotency ledger recognises the replay; different for every other call. The one-shot hash(): a Hash
// object per call cost twice the time (bench/hop-profile.mjs).
export const toolCallIdempotencyKey = (threadId: string, toolCallId: string): string => hash('sha256', `${threadId}:${toolCallId}`, 'hex');

const REGISTERED_EVENTS: ReadonlySet<string> = new Set(RPC_AGENT_TOOLS.map((definition) => definition.event));

const isRegisteredEvent = (event: string): event is AgentToolEvent => REGISTERED_EVENTS.has(event);

// The contract types payloads per registered event. A definition outside the registry has no server
// handler, so it is refused when the belt is built rather than left to time out on every call.
const registeredEventOf = (definition: AnyAgentTool): AgentToolEvent => {
  const { event } = definition;
  if (!isRegisteredEvent(event)) {
    throw new Error(`Tool "${definition.name}" has event "${event}", which RPC_AGENT_TOOLS does not register.`);
  }
  return event;
};

// What the tool parsed with the definition's own strict schema before the body runs. AnyAgentTool
// erases each schema's type, so the tie between an event and its arguments is the definition itself
// (event and schema read from the same registered object), not a type the compiler can follow.
type ParsedToolArgs = z.output<AnyAgentTool['schema']>;

const contextMissing = () => JSON.stringify(toolError('CONTEXT_MISSING'));

/** What the model gets when the user does not approve a call that needs confirmation. */
export const CONFIRMATION_DECLINED_ERROR = ERROR_SENTENCES.CONFIRMATION_DECLINED;

// Pauses the run with the confirmation question. On resume LangGraph runs the proxy again from its first line and
// interrupt() returns the answers in the order they were asked (an approval, a decline, or a person's edit), so
// everything before the last of them must be free of effects: the previews are reads.
const askUser = (confirmation: AgentInterruptValue): unknown => interrupt(confirmation);

// LangChain's tool() runs each call in a fresh AsyncLocalStorage frame holding a new (untraced) LangSmith RunTree:
// about 50 µs of CPU per call, most of the proxy's own cost (bench/, variant (b)). The proxy needs neither: the runtime
// arrives as the call's config, and interrupt() reads the frame the ToolNode already opened around the call.
const rpcTool = (
  body: (args: ParsedToolArgs, runtime: ToolRuntime) => Promise<string>,
  fields: { name: string; description: string; schema: AnyAgentTool['schema'] },
) => new DynamicStructuredTool({ ...fields, func: (args: ParsedToolArgs, _runManager, config) => body(args, config as ToolRuntime) });

// The one generic proxy for every RPC tool. Three jobs: identity and call scope from the runtime
// context (never from the model), one RPC with the definition's event, the envelope back as JSON.
// A tool that needs confirmation first has the server render its question (a preview: the call's checks and gate, no
// write), asks the user (attributed to askedBy) and sends the call only if approved.
export const toRpcProxy = (definition: AnyAgentTool, toolCaller: AgentToolCaller, askedBy: AgentSpeaker = 'rover') => {
  const event = registeredEventOf(definition);
  return rpcTool(
    async (args: ParsedToolArgs, runtime: ToolRuntime): Promise<string> => {
      // Identity and campus pinning come only from the context; the schema is strict, so args cannot carry them.
      const context = resolveRuntimeContext(runtime);
      const identity = resolveIdentity(runtime);
      const scope = resolveCallScope(runtime);
      // Without a tool call id there is no stable idempotency key, so the call cannot run safely either.
      if (!context || !identity || !scope || !runtime.toolCallId) return contextMissing();
      const callId = toolCallIdempotencyKey(context.run.threadId, runtime.toolCallId);
      const send = (callArgs: ParsedToolArgs, preview: boolean) =>
        toolCaller.call(
          event,
          toolRequestOf({ identity, scope, args: callArgs, callId, timeoutMs: toolCaller.timeoutMs, dispatchToken: context.dispatchToken, preview }),
        );
      // The arguments that will run: the model's, or the person's edit of them (asked about again before it runs).
      let callArgs: ParsedToolArgs = args;
      if (definition.confirm) {
        const editable = definition.confirm.editable;
        for (let edits = 0; ; edits += 1) {
          // The question comes from the server, written from the records as the caller may see them (the model's
          // arguments are ids nobody can check). A call the server would refuse is refused now, and nothing is asked:
          // an edit that moves the call out of the caller's rights included.
          const preview = await send(callArgs, true);
          if ('error' in preview) return JSON.stringify(preview);
          const question = previewQuestion(preview.data);
          if (question === undefined) return JSON.stringify(toolError('TOOL_FAILED'));
          // The server records an approving answer against this call id, event and argument hash, and runs the call
          // only with that approval; an edit is merged by the server over these arguments.
          const editableNow = editableValues(editable, callArgs);
          const answer = askUser({
            question: withoutEmDash(question),
            askedBy,
            toolCallId: runtime.toolCallId,
            argsHash: argsHash(callArgs),
            confirmation: {
              event,
              callId,
              args: callArgs,
              ...(editableNow ? { editable: editableNow } : {}),
              ...(edits > 0 ? { edited: changedFields(args, callArgs) } : {}),
            },
          });
          if (isConfirmationEdit(answer) && edits < MAX_EDITS_PER_CALL) {
            // Parsed again with the tool's own schema: the worker runs nothing it would not run from the model.
            const edited = definition.schema.safeParse(answer.editedArgs);
            if (!edited.success) return JSON.stringify(toolError('TOOL_FAILED'));
            callArgs = edited.data;
            continue;
          }
          if (typeof answer === 'string' && isApprovalAnswer(answer)) break;
          return JSON.stringify(toolError('CONFIRMATION_DECLINED'));
        }
      }
      const result = withUserEdits(await send(callArgs, false), args, callArgs);

      // Only a success is announced: the Hub must not celebrate a failed write.
      if (!('error' in result)) {
        const streamEvent = definition.streamOnSuccess?.(callArgs);
        if (streamEvent) {
          runtime.writer?.(result.auditId === undefined ? streamEvent : { ...streamEvent, auditId: result.auditId });
        }
      }
      return JSON.stringify(result);
    },
    {
      name: definition.name,
      description: withoutEmDash(definition.description),
      schema: definition.schema,
    },
  );
};

// Tools that run in the worker and cross no hop. Rover's ask_user attributes its questions to Rover.
export const LOCAL_AGENT_TOOLS = [clockTool, agentMapTool, createAskUserTool('rover')];

// Rover's belt for one run: the RPC tools of the mode that belong to no specialist (shared ones
// included), plus the local tools. Built per turn, never cached across messages.
export const buildAgentTools = (toolCaller: AgentToolCaller, mode: AgentRunModeName = 'school') => [
  ...toolsForMode(mode)
    .filter((definition) => !definition.roles?.length)
    .map((definition) => toRpcProxy(definition, toolCaller)),
  ...LOCAL_AGENT_TOOLS,
];

// One specialist's belt: the role's RPC tools plus the shared ones for the mode, and ask_user stamped with
// the role so the question is attributed to that specialist.
export const buildRoleTools = (role: AgentToolRole, toolCaller: AgentToolCaller, mode: AgentRunModeName = 'school') => [
  ...toolsForRole(role, mode).map((definition) => toRpcProxy(definition, toolCaller, role)),
  createAskUserTool(role),
];

export const buildClassTeacherTools = (toolCaller: AgentToolCaller, mode?: AgentRunModeName) =>
  buildRoleTools('class_teacher', toolCaller, mode);
export const buildSubjectTeacherTools = (toolCaller: AgentToolCaller, mode?: AgentRunModeName) =>
  buildRoleTools('subject_teacher', toolCaller, mode);
export const buildDosTools = (toolCaller: AgentToolCaller, mode?: AgentRunModeName) =>
  buildRoleTools('dos', toolCaller, mode);
