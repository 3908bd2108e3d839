import { AGENT_TOOL_ROLES, LOCAL_TOOL_NAMES, RPC_AGENT_TOOLS, SPEAKER_NAMES, isMutatingEvent, type AgentSpeaker } from '@naalya/agent-tools';

export const speakerName = (speaker: string): string => SPEAKER_NAMES[speaker as AgentSpeaker] ?? SPEAKER_NAMES.rover;
export const isSpecialist = (speaker: string): boolean => (AGENT_TOOL_ROLES as readonly string[]).includes(speaker);

const LOCAL_LABELS: Record<string, string> = {
  [LOCAL_TOOL_NAMES.clock]: 'Check the date and time',
  [LOCAL_TOOL_NAMES.agentMap]: 'Look up who can help',
  [LOCAL_TOOL_NAMES.askUser]: 'Ask you a question',
};

const EVENT_BY_TOOL: ReadonlyMap<string, string> = new Map(RPC_AGENT_TOOLS.map((tool) => [tool.name, tool.event]));

/** "list_class_students" → "List class students": the tool's name read out, which the registry keeps plain. */
export const toolLabel = (name: string): string => {
  const local = LOCAL_LABELS[name];
  if (local) return local;
  const words = name.split('_').filter(Boolean).join(' ');
  return words ? words[0]?.toUpperCase() + words.slice(1) : name;
};

/** The event of a tool, by its name (an audit row names its tool). */
export const toolEvent = (name: string | null): string | undefined => (name === null ? undefined : EVENT_BY_TOOL.get(name));

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

const TOOL_BY_EVENT: ReadonlyMap<string, string> = new Map(RPC_AGENT_TOOLS.map((tool) => [tool.event, tool.name]));

/** "delete.department" → "Delete department": a committed write named as its tool card names it. */
export const eventLabel = (event: string): string => {
  const tool = TOOL_BY_EVENT.get(event);
  return tool ? toolLabel(tool) : event;
};

const words = (text: string) => text.replaceAll('_', ' ');
const sentence = (text: string) => (text ? text[0]?.toUpperCase() + text.slice(1) : text);

/**
 * What an audit row did, as a person reads it: the tool's label for an agent write ("Delete department"), the action
 * in words for a REST write, with the route or the action under it for whoever needs the exact name.
 */
export const auditActionLabel = (row: { tool: string | null; route: string | null; action: string; resourceType: string; source: string }): { label: string; detail: string } => {
  const action = sentence(`${words(row.action)} ${words(row.resourceType)}`);
  // Rows from before the tool was recorded: the tool their event most likely came from.
  const tool = row.tool ?? (row.source === 'agent' ? toolForAudit(row.action, row.resourceType) : undefined);
  if (tool) return { label: toolLabel(tool), detail: row.tool ? row.tool : action };
  return { label: action, detail: row.route ?? '' };
};

/** The tools that write, by label: what the Activity page's tool filter offers. */
export const writeTools = (): { name: string; label: string }[] =>
  RPC_AGENT_TOOLS.filter((tool) => isMutatingEvent(tool.event))
    .map((tool) => ({ name: tool.name, label: toolLabel(tool.name) }))
    .sort((a, b) => a.label.localeCompare(b.label));
