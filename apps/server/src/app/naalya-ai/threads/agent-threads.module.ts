import { Module } from '@nestjs/common';
import { TeachingModule } from '../../teaching/teaching.module.js';
import { AgentDispatchModule } from '../dispatch/agent-dispatch.module.js';
import { AgentRunEventsModule } from '../events/agent-run-events.module.js';
import { RunLifecycleModule } from '../lifecycle/run-lifecycle.module.js';
import { ModelPolicyModule } from '../model-policy/model-policy.module.js';
import { AgentRunStoreModule } from '../runs/agent-run-store.module.js';
import { AgentCallerGuard } from './agent-caller.guard.js';
import { AgentContextController } from './agent-context.controller.js';
import { AgentThreadsController } from './agent-threads.controller.js';
import { AgentThreadsService } from './agent-threads.service.js';

@Module({
  imports: [TeachingModule, AgentRunStoreModule, AgentDispatchModule, AgentRunEventsModule, RunLifecycleModule, ModelPolicyModule],
  controllers: [AgentContextController, AgentThreadsController],
  providers: [AgentCallerGuard, AgentThreadsService],
  exports: [AgentThreadsService],
})
export class AgentThreadsModule {}
