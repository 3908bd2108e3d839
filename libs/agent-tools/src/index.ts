export * from './lib/define-agent-tool.js';
export * from './lib/agent-tool-role.js';
export * from './lib/agent-runtime-context.js';
export * from './lib/agent-tool-envelope.js';
export * from './lib/agent-tool-registry.js';
export * from './lib/agent-run.js';
export * from './lib/tools/staff.tools.js';
export * from './lib/tools/department.tools.js';
