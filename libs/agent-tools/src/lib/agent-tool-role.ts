import { z } from 'zod';

/** Specialist roles, in registration order: Angie, Bean, Sarah. */
export const AGENT_TOOL_ROLES = ['class_teacher', 'subject_teacher', 'dos'] as const;
export type AgentToolRole = (typeof AGENT_TOOL_ROLES)[number];

/** What the server resolved about the caller's hats; the model cannot change it. */
export const agentCapabilitiesSchema = z.strictObject({
  isClassTeacher: z.boolean(),
  isSubjectTeacher: z.boolean(),
  isDirectorOfStudies: z.boolean(),
});
export type AgentCapabilities = z.infer<typeof agentCapabilitiesSchema>;

const HAS_ROLE: Record<AgentToolRole, (capabilities: AgentCapabilities) => boolean> = {
  class_teacher: (capabilities) => capabilities.isClassTeacher,
  subject_teacher: (capabilities) => capabilities.isSubjectTeacher,
  dos: (capabilities) => capabilities.isDirectorOfStudies,
};

/** The specialists this caller may talk to this turn, in registration order. */
export const eligibleAgentRoles = (capabilities: AgentCapabilities): AgentToolRole[] =>
  AGENT_TOOL_ROLES.filter((role) => HAS_ROLE[role](capabilities));
