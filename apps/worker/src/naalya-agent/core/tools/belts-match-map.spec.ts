import { AGENT_RUN_MODES, AGENT_TOOL_ROLES, agentMapFor, toolError, type AgentSpeaker } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import type { AgentToolCaller } from './agent-tool-caller.js';
import { buildAgentTools, buildRoleTools } from './build-agent-tools.js';

// The server answers GET /agent/map with agentMapFor; the worker builds the belts it runs. A local tool added on one
// side only (or an RPC tool placed differently) would make the map promise a tool the run lacks, or hide one it has.
const caller: AgentToolCaller = { timeoutMs: 1_000, call: async () => toolError('TOOL_FAILED') };
const everyHat = { isClassTeacher: true, isSubjectTeacher: true, isDirectorOfStudies: true };

describe('the agent map lists exactly the tools of the belts the worker builds', () => {
  it.each(AGENT_RUN_MODES)('%s mode: Rover and every specialist, real registry and local tools', (mode) => {
    const belts: [AgentSpeaker, string[]][] = [
      ['rover', buildAgentTools(caller, mode).map((belted) => belted.name)],
      ...AGENT_TOOL_ROLES.map((role): [AgentSpeaker, string[]] => [role, buildRoleTools(role, caller, mode).map((belted) => belted.name)]),
    ];
    expect(agentMapFor(everyHat, mode).roster.map((entry) => [entry.speaker, entry.tools])).toEqual(belts);
  });
});
