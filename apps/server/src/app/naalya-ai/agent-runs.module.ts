import { Module } from '@nestjs/common';
import { CampusesModule } from '../campuses/campuses.module.js';
import { TeachingModule } from '../teaching/teaching.module.js';
import { AgentCallerGuard } from './threads/agent-caller.guard.js';
import { AgentContextController } from './threads/agent-context.controller.js';
import { AgentContextService } from './dispatch/agent-context.service.js';
import { AgentRunEventStore } from './events/agent-run-event-store.service.js';
import { AgentRunIngest } from './events/agent-run-ingest.service.js';
import { AgentRunNotifier } from './events/agent-run-notifier.service.js';
import { AgentRunPublisher } from './dispatch/agent-run-publisher.service.js';
import { AgentRunStreamService } from './events/agent-run-stream.service.js';
import { AgentRunStore } from './runs/agent-run-store.service.js';
import { AgentThreadsController } from './threads/agent-threads.controller.js';
import { AgentThreadsService } from './threads/agent-threads.service.js';

@Module({
  imports: [CampusesModule, TeachingModule],
  controllers: [AgentContextController, AgentThreadsController],
  providers: [
    AgentCallerGuard,
    AgentContextService,
    AgentThreadsService,
    AgentRunStore,
    AgentRunPublisher,
    AgentRunEventStore,
    AgentRunIngest,
    AgentRunNotifier,
    AgentRunStreamService,
  ],
  exports: [AgentContextService],
})
export class AgentRunsModule {}
