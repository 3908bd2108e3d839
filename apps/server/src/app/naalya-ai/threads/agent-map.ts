import {
  eligibleAgentRoles,
  toolsForMode,
  toolsForRole,
  type AgentCapabilities,
  type AgentRunModeName,
  type AgentSpeaker,
} from '@naalya/agent-tools';

/** The worker's local tools, which cross no hop: Rover carries all three, each specialist its own ask_user. */
export const ROVER_LOCAL_TOOLS = ['clock', 'get_agent_map', 'ask_user'] as const;
export const SPECIALIST_LOCAL_TOOLS = ['ask_user'] as const;

/** Display copy only: files and code name roles, people meet personas. */
const SPEAKER_NAMES: Record<AgentSpeaker, string> = { rover: 'Rover', class_teacher: 'Angie', subject_teacher: 'Bean', dos: 'Sarah' };

export type AgentMapEntry = { speaker: AgentSpeaker; name: string; tools: string[] };
export type AgentMap = { mode: AgentRunModeName; roster: AgentMapEntry[] };

/**
 * Who this caller can talk to in a run mode, and with which tools: Rover first, then the specialists their hats
 * make eligible, in registration order (the order the worker registers them in). The same helpers build the belts
 * in the worker, so the map cannot promise a tool the run would not have.
 */
export const agentMapFor = (capabilities: AgentCapabilities, mode: AgentRunModeName): AgentMap => ({
  mode,
  roster: [
    {
      speaker: 'rover',
      name: SPEAKER_NAMES.rover,
      tools: [...toolsForMode(mode).filter((definition) => !definition.roles?.length).map((definition) => definition.name), ...ROVER_LOCAL_TOOLS],
    },
    ...eligibleAgentRoles(capabilities).map((role) => ({
      speaker: role,
      name: SPEAKER_NAMES[role],
      tools: [...toolsForRole(role, mode).map((definition) => definition.name), ...SPECIALIST_LOCAL_TOOLS],
    })),
  ],
});
