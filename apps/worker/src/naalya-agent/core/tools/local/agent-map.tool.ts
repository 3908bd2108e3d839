import { eligibleAgentRoles, LOCAL_TOOL_NAMES, SPECIALIST_PROFILES, toolError, toolsForMode, toolsForRole } from '@naalya/agent-tools';
import { tool, type ToolRuntime } from 'langchain';
import { z } from 'zod';
import { resolvePermissions, resolveRuntimeContext } from '../tool-context.js';

// Display only: what Rover and the specialists offer this user in this run. The server decides whether any
// call may run; nothing here grants or refuses anything.
export const agentMapTool = tool(
  async (_args: Record<string, never>, runtime: ToolRuntime): Promise<string> => {
    const context = resolveRuntimeContext(runtime);
    if (!context) return JSON.stringify(toolError('CONTEXT_MISSING'));
    const mode = context.runMode.mode;
    const names = (definitions: Array<{ name: string }>) => definitions.map((definition) => definition.name);
    return JSON.stringify({
      user: context.userDetails.fullName,
      mode: context.runMode.mode === 'campus' ? `campus (${context.runMode.campus.name})` : 'school',
      rover: { tools: names(toolsForMode(mode).filter((definition) => !definition.roles?.length)) },
      specialists: eligibleAgentRoles(context.capabilities).map((role) => ({
        role,
        name: SPECIALIST_PROFILES[role].persona,
        title: SPECIALIST_PROFILES[role].title,
        does: SPECIALIST_PROFILES[role].summary,
        tools: names(toolsForRole(role, mode)),
      })),
      permissions: resolvePermissions(runtime).map((rule) => `${rule.inverted ? 'cannot ' : ''}${[rule.action].flat().join('/')} ${[rule.subject].flat().join('/')}`),
      note: 'For display only. The platform checks every action when it runs.',
    });
  },
  {
    name: LOCAL_TOOL_NAMES.agentMap,
    description:
      'Show which assistants this user can work with in this chat and which tools each one has. Use it to explain who can help with what.',
    schema: z.strictObject({}),
  },
);
