/** The options of `nx g @naalya/workspace-plugin:agent-tool`, as schema.json declares them. */
export type AgentToolGeneratorSchema = {
  name: string;
  event: string;
  domain: string;
  posture: string;
  gate?: string;
  /** Comma-separated on the command line; an array when called from code. */
  roles?: string | string[];
  shared?: boolean;
  modes?: string | string[];
  campusScoped?: boolean;
  auditAction?: string;
  auditResource?: string;
};
