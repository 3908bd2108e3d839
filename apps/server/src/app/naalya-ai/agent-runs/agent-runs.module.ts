import { Module } from '@nestjs/common';
import { CampusesModule } from '../../campuses/campuses.module.js';
import { TeachingModule } from '../../teaching/teaching.module.js';
import { AgentCallerGuard } from './agent-caller.guard.js';
import { AgentContextController } from './agent-context.controller.js';
import { AgentContextService } from './agent-context.service.js';
import { AgentRunEventStore } from './agent-run-event-store.service.js';
import { AgentRunIngest } from './agent-run-ingest.service.js';
import { AgentRunNotifier } from './agent-run-notifier.service.js';
import { AgentRunPublisher } from './agent-run-publisher.service.js';
import { AgentRunStreamService } from './agent-run-stream.service.js';
import { AgentThreadsController } from './agent-threads.controller.js';
import { AgentThreadsService } from './agent-threads.service.js';

@Module({
  imports: [CampusesModule, TeachingModule],
  controllers: [AgentContextController, AgentThreadsController],
  providers: [
    AgentCallerGuard,
    AgentContextService,
    AgentThreadsService,
    AgentRunPublisher,
    AgentRunEventStore,
    AgentRunIngest,
    AgentRunNotifier,
    AgentRunStreamService,
  ],
  exports: [AgentContextService],
})
export class AgentRunsModule {}
