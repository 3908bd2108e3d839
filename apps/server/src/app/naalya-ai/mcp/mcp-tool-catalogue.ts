import {
  RPC_AGENT_TOOLS,
  agentMapFor,
  isMutatingEvent,
  requiresConfirmation,
  type AgentCapabilities,
  type AgentRunModeName,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const RPC_TOOLS_BY_NAME = new Map<string, AnyAgentTool>(RPC_AGENT_TOOLS.map((definition) => [definition.name, definition]));

/**
 * The tools one MCP caller may see and call: the union of the RPC tools on the belts their roster would give Rover and
 * each specialist in the mode (agentMapFor, the same roster the worker builds its belts from, by role tags), no more.
 * Local tools (clock, the agent map, ask_user) live in the worker and cross no hop, so the door has none.
 */
export const mcpToolsFor = (capabilities: AgentCapabilities, mode: AgentRunModeName): AnyAgentTool[] => {
  const names = new Set(agentMapFor(capabilities, mode).roster.flatMap((entry) => entry.tools));
  return RPC_AGENT_TOOLS.filter((definition) => names.has(definition.name));
};

/**
 * One tool as tools/list shows it: its JSON Schema generated from the same zod schema the server parses with, and its
 * annotations set explicitly. A read is read-only and idempotent. A write is never idempotent as MCP means it (the same
 * arguments again make a second change): the ledger makes only a repeat of the same call (same session and request id)
 * run once. It is destructive exactly when it needs the user's confirmation (a delete, an approval, a reassignment).
 */
export const toMcpTool = (definition: AnyAgentTool): Tool => {
  const isWrite = isMutatingEvent(definition.event);
  return {
    name: definition.name,
    description: definition.description,
    inputSchema: z.toJSONSchema(definition.schema, { io: 'input' }) as Tool['inputSchema'],
    annotations: {
      readOnlyHint: !isWrite,
      destructiveHint: isWrite && requiresConfirmation(definition),
      idempotentHint: !isWrite,
      openWorldHint: false,
    },
  };
};

export const mcpToolDefinition = (name: string): AnyAgentTool | undefined => RPC_TOOLS_BY_NAME.get(name);
