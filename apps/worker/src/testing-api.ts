// `@naalya/worker/testing`: the worker's tool client and its run event buffer, for code outside the worker that calls
// the server or publishes run events as the worker does (the reliability battery's caller, the bench), and its scripted
// model's policy, which the evals play over the wire through the model simulator: built to dist/ with the app; one place to follow a moved file.
export { AgentToolService } from './naalya-agent/core/tools/agent-tool.service.js';
export { toRpcProxy, toolCallIdempotencyKey } from './naalya-agent/core/tools/build-agent-tools.js';
export { callScopeFromContext } from './naalya-agent/core/tools/tool-context.js';
export { RUN_EVENTS_LINGER_MS_DEFAULT, RunEventBuffer } from './naalya-agent/runs/run-event.buffer.js';
export { readTurn, scriptedPolicy, SCRIPTED_LABEL } from './naalya-agent/core/model/scripted-policy.js';
export type { ScriptedPolicy, ScriptedTool } from './naalya-agent/core/model/scripted-chat-model.js';
export type { Step } from './naalya-agent/core/model/scripted-policy.js';
