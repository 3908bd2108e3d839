import { AGENT_TOOL_ROLES, RPC_AGENT_TOOLS, isMutatingEvent, type AgentSpeaker } from '@naalya/agent-tools';

/** Display copy only: code names roles, people meet personas. */
export const SPEAKER_NAMES: Record<AgentSpeaker, string> = { rover: 'Rover', class_teacher: 'Angie', subject_teacher: 'Bean', dos: 'Sarah' };
export const SPEAKER_ROLES: Record<AgentSpeaker, string> = {
  rover: 'assistant',
  class_teacher: 'class teacher',
  subject_teacher: 'subject teacher',
  dos: 'director of studies',
};

export const speakerName = (speaker: string): string => SPEAKER_NAMES[speaker as AgentSpeaker] ?? 'Rover';
export const isSpecialist = (speaker: string): boolean => (AGENT_TOOL_ROLES as readonly string[]).includes(speaker);

const LOCAL_LABELS: Record<string, string> = {
  clock: 'Check the date and time',
  get_agent_map: 'Look up who can help',
  ask_user: 'Ask you a question',
};

const EVENT_BY_TOOL: ReadonlyMap<string, string> = new Map(RPC_AGENT_TOOLS.map((tool) => [tool.name, tool.event]));

/** "list_class_students" → "List class students": the tool's name read out, which the registry keeps plain. */
export const toolLabel = (name: string): string => {
  const local = LOCAL_LABELS[name];
  if (local) return local;
  const words = name.split('_').filter(Boolean).join(' ');
  return words ? words[0]?.toUpperCase() + words.slice(1) : name;
};

/** Whether a tool changes state: a write whose answer is lost has an unknown outcome, never a known one. */
export const isWriteTool = (name: string, event?: string): boolean => {
  const known = event ?? EVENT_BY_TOOL.get(name);
  return known ? isMutatingEvent(known) : false;
};

/** The tool an agent-written audit row most likely came from: its event is `<action>.<resource>`. */
export const toolForAudit = (action: string, resourceType: string): string | undefined => {
  const event = `${action.replaceAll('_', '-')}.${resourceType.replaceAll('_', '-')}`;
  const noun = resourceType.replaceAll('_', '-');
  return (
    RPC_AGENT_TOOLS.find((tool) => tool.event === event)?.name ??
    RPC_AGENT_TOOLS.find((tool) => tool.event.startsWith(`${action.split('_')[0]}.`) && tool.event.includes(noun))?.name
  );
};
