import { Module } from '@nestjs/common';
import { AgentDispatchModule } from './dispatch/agent-dispatch.module.js';
import { AgentRunEventsModule } from './events/agent-run-events.module.js';
import { DeadLetteredStepsModule } from './events/dead-lettered-steps.module.js';
import { RunLifecycleModule } from './lifecycle/run-lifecycle.module.js';
import { ModelPolicyModule } from './model-policy/model-policy.module.js';
import { AgentRunStoreModule } from './runs/agent-run-store.module.js';
import { McpModule } from './mcp/mcp.module.js';
import { AgentThreadsModule } from './threads/agent-threads.module.js';

/**
 * Conversations with the agent, in seven rooms: mcp (the MCP door: connected-app tokens and the door itself), threads (the HTTP routes and the conversation they drive), runs (the
 * run row, its only writer), dispatch (the context a run carries and the broker out), events (the broker in: run
 * events, stored and streamed, and run steps dead-lettered back), lifecycle (what the server decides on its own:
 * leases, usage reports, the sweeper, cancel, queued runs) and model-policy (each school's language model choices
 * and its day of tokens).
 */
@Module({
  imports: [AgentThreadsModule, AgentRunStoreModule, AgentDispatchModule, AgentRunEventsModule, RunLifecycleModule, DeadLetteredStepsModule, ModelPolicyModule, McpModule],
})
export class AgentRunsModule {}
