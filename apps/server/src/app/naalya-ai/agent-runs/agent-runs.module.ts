import { Module } from '@nestjs/common';
import { StaffModule } from '../../staff/staff.module.js';
import { AgentContextController } from './agent-context.controller.js';
import { AgentContextService } from './agent-context.service.js';

@Module({
  imports: [StaffModule],
  controllers: [AgentContextController],
  providers: [AgentContextService],
  exports: [AgentContextService],
})
export class AgentRunsModule {}
