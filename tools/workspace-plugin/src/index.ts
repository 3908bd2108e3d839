export { agentToolGenerator } from './generators/agent-tool/agent-tool.js';
export type { AgentToolGeneratorSchema } from './generators/agent-tool/schema.js';
