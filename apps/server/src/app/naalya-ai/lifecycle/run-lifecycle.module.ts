import { Module } from '@nestjs/common';
import { AgentDispatchModule } from '../dispatch/agent-dispatch.module.js';
import { AgentRunEventsModule } from '../events/agent-run-events.module.js';
import { ModelPolicyModule } from '../model-policy/model-policy.module.js';
import { AgentRunStoreModule } from '../runs/agent-run-store.module.js';
import { RunLeaseController } from './run-lease.controller.js';
import { RunUsageController } from './run-usage.controller.js';
import { RunLifecycle } from './run-lifecycle.service.js';
import { RunSweeper } from './run-sweeper.service.js';
import { RetentionPurge } from './retention-purge.service.js';

@Module({
  imports: [AgentRunStoreModule, AgentDispatchModule, AgentRunEventsModule, ModelPolicyModule],
  controllers: [RunLeaseController, RunUsageController],
  providers: [RunLifecycle, RunSweeper, RetentionPurge],
  exports: [RunLifecycle, RunSweeper, RetentionPurge],
})
export class RunLifecycleModule {}
