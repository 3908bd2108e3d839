import { Module } from '@nestjs/common';
import { AgentRunStoreModule } from '../runs/agent-run-store.module.js';
import { AgentRunEventStore } from './agent-run-event-store.service.js';
import { AgentRunIngest } from './agent-run-ingest.service.js';
import { AgentRunNotifier } from './agent-run-notifier.service.js';
import { AgentRunStreamService } from './agent-run-stream.service.js';

@Module({
  imports: [AgentRunStoreModule],
  providers: [AgentRunEventStore, AgentRunIngest, AgentRunNotifier, AgentRunStreamService],
  exports: [AgentRunStreamService, AgentRunEventStore, AgentRunIngest],
})
export class AgentRunEventsModule {}
