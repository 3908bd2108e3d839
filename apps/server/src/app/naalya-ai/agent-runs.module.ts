import { Module } from '@nestjs/common';
import { AgentDispatchModule } from './dispatch/agent-dispatch.module.js';
import { AgentRunEventsModule } from './events/agent-run-events.module.js';
import { AgentRunStoreModule } from './runs/agent-run-store.module.js';
import { AgentThreadsModule } from './threads/agent-threads.module.js';

/**
 * Conversations with the agent, in four rooms: threads (the HTTP routes and the conversation they drive), runs (the
 * run row, its only writer), dispatch (the context a run carries and the broker out) and events (the broker in, the
 * stored events and their stream).
 */
@Module({
  imports: [AgentThreadsModule, AgentRunStoreModule, AgentDispatchModule, AgentRunEventsModule],
})
export class AgentRunsModule {}
