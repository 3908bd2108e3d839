import { Module } from '@nestjs/common';
import { CampusesModule } from '../../campuses/campuses.module.js';
import { TeachingModule } from '../../teaching/teaching.module.js';
import { AgentContextService } from './agent-context.service.js';
import { AgentRunPublisher } from './agent-run-publisher.service.js';

@Module({
  imports: [CampusesModule, TeachingModule],
  providers: [AgentContextService, AgentRunPublisher],
  exports: [AgentContextService, AgentRunPublisher],
})
export class AgentDispatchModule {}
