import { hash } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import {
  CONFIRMATION_ANSWERS,
  MAX_EDITS_PER_CALL,
  identityFromUserDetails,
  previewQuestion,
  toolError,
  toolRequestOf,
  withUserEdits,
  withoutEmDash,
  type AgentRuntimeContext,
  type AgentToolEvent,
  type AgentToolPayload,
  type AgentToolResult,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { scopeOfRunMode } from '../dispatch/dispatch-token.js';
import { approvalRefusal, recordConfirmationAnswer } from '../runs/tool-call-approvals.js';
import { recordConfirmationEdit } from '../runs/tool-call-edits.js';
import { toToolError } from '../tools/tool-error.js';
import { asCaller } from '../threads/agent-caller.guard.js';
import { canonicalHash } from '../tools/canonical-hash.js';
import { mcpToolsFor, toMcpTool } from './mcp-tool-catalogue.js';

/** What a session needs from the rest of the server: the door's publisher, and how long a call and a question may take. */
export type McpSessionDeps = {
  publish: <E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]) => Promise<AgentToolResult>;
  callTimeoutMs: number;
  questionTimeoutMs: number;
  /** How long a recorded approval stays usable (TOOL_APPROVAL_TTL_SECONDS). */
  approvalTtlSeconds: number;
};

/** What a tools/call without a confirmation path answers: nothing ran, and the client is told why. */
export const NO_ELICITATION_REFUSAL =
  'This tool changes something that needs your confirmation first, and this MCP client cannot ask you (it does not support elicitation). Nothing was done. Use a client that supports elicitation, or ask Rover in the Hub.';

/**
 * Stable per session and JSON-RPC request id: a repeated tools/call with the same id in the same session is the same
 * call (the ledger answers it), the same id in another session is another call.
 */
export const mcpCallId = (sessionId: string, requestId: string | number): string =>
  hash('sha256', `mcp:${sessionId}:${typeof requestId}:${String(requestId)}`, 'hex');

/** The form's fields for a confirmation: the editable arguments as text, each with its current value. */
const editableProperties = (editable: readonly string[], args: Record<string, unknown>) =>
  Object.fromEntries(
    editable.map((field) => [field, { type: 'string' as const, title: field, ...(typeof args[field] === 'string' ? { default: args[field] } : {}) }]),
  );

/** The fields the person changed in the form (an emptied one unsets its argument); nothing for an unchanged form. */
const formEdits = (editable: readonly string[], args: Record<string, unknown>, content: Record<string, unknown> | undefined): Record<string, unknown> =>
  Object.fromEntries(
    editable
      .filter((field) => content?.[field] !== undefined && content[field] !== (args[field] ?? ''))
      .map((field) => [field, content?.[field] === '' ? null : content?.[field]]),
  );

const asToolResult = (result: AgentToolResult): CallToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(result) }],
  isError: 'error' in result,
});

/**
 * One MCP session's protocol server: the tools this caller may use (by their roster in the token's mode) and every
 * call published on the tools exchange with the session's direct run context (identity, scope and dispatch token the
 * server minted), never from the client's arguments.
 */
export const createMcpSessionServer = (context: AgentRuntimeContext, caller: JwtPayload, deps: McpSessionDeps): Server => {
  const tools = new Map<string, AnyAgentTool>(
    mcpToolsFor(context.capabilities, context.runMode.mode).map((definition) => [definition.name, definition]),
  );
  const server = new Server({ name: 'naalya', version: '1.0.0' }, { capabilities: { tools: { listChanged: false } } });

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools.values()].map(toMcpTool) }));

  // One message on the tools exchange with the session's minted context; `preview` asks the server for the confirmation
  // question (the call's own checks and gate, nothing written) instead of the call.
  const send = (definition: AnyAgentTool, args: unknown, callId: string, preview: boolean): Promise<AgentToolResult> =>
    deps.publish(
      definition.event as AgentToolEvent,
      toolRequestOf({
        identity: identityFromUserDetails(context.userDetails),
        scope: scopeOfRunMode(context.runMode),
        args,
        callId,
        timeoutMs: deps.callTimeoutMs,
        dispatchToken: context.dispatchToken,
        preview,
      }) as AgentToolPayload[AgentToolEvent],
    );

  // Asks the person through MCP elicitation with the question Rover asks (the server's preview, written from the
  // records), and records the answer as the same approval row a resume records (call id, tool, argument hash, user),
  // which execute() checks. A tool with editable arguments shows them as the form's fields: a changed value is an edit,
  // checked and recorded as a resume's is, previewed again (an edit out of the caller's rights is refused there) and
  // asked about again; the approval is of the arguments that will run. Returns them, or the refusal to answer with.
  const confirm = async (definition: AnyAgentTool, args: unknown, callId: string): Promise<{ run: unknown } | { refusal: CallToolResult }> => {
    const parsed = definition.schema.safeParse(args);
    // Arguments the tool's schema refuses are sent as they are: the server answers with its masked sentence.
    if (!parsed.success || !definition.confirm) return { run: args };
    let callArgs = parsed.data as Record<string, unknown>;
    const call = { threadId: context.run.threadId, callId, event: definition.event, userId: caller.sub };
    // A repeated request (same call id) was answered already: asking again could not change the recorded answer.
    if ((await asCaller(caller, () => approvalRefusal({ ...call, argsHash: canonicalHash(callArgs) }))) !== 'none') return { run: args };
    if (!server.getClientCapabilities()?.elicitation) {
      return { refusal: { content: [{ type: 'text', text: JSON.stringify({ error: NO_ELICITATION_REFUSAL, code: 'CONFIRMATION_REQUIRED' }) }], isError: true } };
    }
    const editable = definition.confirm.editable ?? [];
    for (let edits = 0; ; edits += 1) {
      // A call the server would refuse is refused now, and nothing is asked.
      const preview = await send(definition, callArgs, callId, true);
      if ('error' in preview) return { refusal: asToolResult(preview) };
      const question = previewQuestion(preview.data);
      if (question === undefined) return { refusal: asToolResult(toolError('TOOL_FAILED')) };
      const answer = await server.elicitInput(
        { mode: 'form', message: withoutEmDash(question), requestedSchema: { type: 'object', properties: editableProperties(editable, callArgs) } },
        { timeout: deps.questionTimeoutMs },
      );
      const approved = answer.action === 'accept';
      const changed = approved ? formEdits(editable, callArgs, answer.content) : {};
      const argsHash = canonicalHash(callArgs);
      if (Object.keys(changed).length > 0 && edits < MAX_EDITS_PER_CALL) {
        const interrupt = { interruptId: `mcp:${callId}:${edits}`, argsHash, confirmation: { event: definition.event, callId, args: callArgs } };
        try {
          callArgs = await asCaller(caller, () =>
            recordConfirmationEdit({ schoolId: context.userDetails.schoolId, threadId: call.threadId, runId: context.run.runId, userId: caller.sub, interrupt, edits: changed }),
          );
        } catch (error) {
          return { refusal: asToolResult(toToolError(error, 'mcp edit')) };
        }
        continue;
      }
      await asCaller(caller, () =>
        recordConfirmationAnswer({
          ...call,
          argsHash,
          schoolId: context.userDetails.schoolId,
          runId: context.run.runId,
          interruptId: `mcp:${callId}`,
          answer: approved ? CONFIRMATION_ANSWERS.approve : CONFIRMATION_ANSWERS.decline,
          ttlSeconds: deps.approvalTtlSeconds,
        }),
      );
      return approved ? { run: callArgs } : { refusal: asToolResult(toolError('CONFIRMATION_DECLINED')) };
    }
  };

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const definition = tools.get(request.params.name);
    if (!definition) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${request.params.name}`);
    if (!extra.sessionId) throw new McpError(ErrorCode.InvalidRequest, 'A tools/call needs a session.');
    const callId = mcpCallId(extra.sessionId, extra.requestId);
    const args = request.params.arguments ?? {};
    const confirmed = await confirm(definition, args, callId);
    if ('refusal' in confirmed) return confirmed.refusal;
    const result = await send(definition, confirmed.run, callId, false);
    // Only an edited confirmation changes what runs: the client is told which arguments the person changed.
    return asToolResult(confirmed.run === args ? result : withUserEdits(result, args as Record<string, unknown>, confirmed.run as Record<string, unknown>));
  });
  return server;
};
