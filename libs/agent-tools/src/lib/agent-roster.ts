import type { AgentSpeaker } from './agent-run.js';
import { toolsForMode, toolsForRole } from './agent-tool-registry.js';
import { eligibleAgentRoles, type AgentCapabilities, type AgentToolRole } from './agent-tool-role.js';
import type { AgentRunModeName } from './define-agent-tool.js';

/**
 * Who people meet. Personas live only in copy: code, files and the task tool's subagent_type use the role. `hat` is
 * the human role the specialist works with, `title` how the specialist introduces itself.
 */
export type SpecialistProfile = { persona: string; hat: string; title: string; summary: string };

export const SPECIALIST_PROFILES: Record<AgentToolRole, SpecialistProfile> = {
  class_teacher: {
    persona: 'Angie',
    hat: 'class teacher',
    title: 'class teacher assistant',
    summary: "Works with the user's own classes as their class teacher: class lists, students and attendance registers.",
  },
  subject_teacher: {
    persona: 'Bean',
    hat: 'subject teacher',
    title: 'subject teacher assistant',
    summary: 'Works with the subjects and classes the user teaches: gradebooks, marks and lesson plans.',
  },
  dos: {
    persona: 'Sarah',
    hat: 'director of studies',
    title: 'director of studies assistant',
    summary: 'Works on academic oversight: lesson plans waiting for approval, teaching assignments and results.',
  },
};

export const SPEAKER_NAMES: Record<AgentSpeaker, string> = {
  rover: 'Rover',
  class_teacher: SPECIALIST_PROFILES.class_teacher.persona,
  subject_teacher: SPECIALIST_PROFILES.subject_teacher.persona,
  dos: SPECIALIST_PROFILES.dos.persona,
};

export const SPEAKER_HATS: Record<AgentSpeaker, string> = {
  rover: 'assistant',
  class_teacher: SPECIALIST_PROFILES.class_teacher.hat,
  subject_teacher: SPECIALIST_PROFILES.subject_teacher.hat,
  dos: SPECIALIST_PROFILES.dos.hat,
};

/** The tools that run in the worker and cross no hop. */
export const LOCAL_TOOL_NAMES = { clock: 'clock', agentMap: 'get_agent_map', askUser: 'ask_user' } as const;

/** Rover carries every local tool; each specialist only its own ask_user, so its questions are attributed to it. */
export const ROVER_LOCAL_TOOLS = [LOCAL_TOOL_NAMES.clock, LOCAL_TOOL_NAMES.agentMap, LOCAL_TOOL_NAMES.askUser] as const;
export const SPECIALIST_LOCAL_TOOLS = [LOCAL_TOOL_NAMES.askUser] as const;

const names = (definitions: Array<{ name: string }>) => definitions.map((definition) => definition.name);

/** Rover's RPC tools in a mode: those no specialist owns (shared ones included). */
export const roverToolsForMode = (mode: AgentRunModeName) => toolsForMode(mode).filter((definition) => !definition.roles?.length);

/** The names on a speaker's belt in a run mode, in belt order: its RPC tools, then its local tools. */
export const beltToolNames = (speaker: AgentSpeaker, mode: AgentRunModeName): string[] =>
  speaker === 'rover'
    ? [...names(roverToolsForMode(mode)), ...ROVER_LOCAL_TOOLS]
    : [...names(toolsForRole(speaker, mode)), ...SPECIALIST_LOCAL_TOOLS];

export type AgentMapEntry = { speaker: AgentSpeaker; name: string; tools: string[] };
/** GET /agent/map. */
export type AgentMap = { mode: AgentRunModeName; roster: AgentMapEntry[] };

/**
 * Who this caller can talk to in a run mode, and with which tools: Rover first, then the specialists their hats make
 * eligible, in registration order (the order the worker registers them in).
 */
export const agentMapFor = (capabilities: AgentCapabilities, mode: AgentRunModeName): AgentMap => ({
  mode,
  roster: (['rover', ...eligibleAgentRoles(capabilities)] as const).map((speaker) => ({
    speaker,
    name: SPEAKER_NAMES[speaker],
    tools: beltToolNames(speaker, mode),
  })),
});
