// `@naalya/worker/testing`: the worker's tool client, for code outside the worker that calls the server as the worker
// does (the reliability battery's caller, the bench): built to dist/ with the app; one place to follow a moved file.
export { AgentToolService, transportFailureMessage } from './naalya-agent/core/tools/agent-tool.service.js';
export { toRpcProxy, toolCallIdempotencyKey } from './naalya-agent/core/tools/build-agent-tools.js';
export { callScopeFromContext } from './naalya-agent/core/tools/tool-context.js';
