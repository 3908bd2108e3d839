import { Module } from '@nestjs/common';
import { CampusesModule } from '../../campuses/campuses.module.js';
import { AgentContextController } from './agent-context.controller.js';
import { AgentContextService } from './agent-context.service.js';

@Module({
  imports: [CampusesModule],
  controllers: [AgentContextController],
  providers: [AgentContextService],
  exports: [AgentContextService],
})
export class AgentRunsModule {}
