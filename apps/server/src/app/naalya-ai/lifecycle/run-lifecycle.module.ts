import { Module } from '@nestjs/common';
import { AgentDispatchModule } from '../dispatch/agent-dispatch.module.js';
import { AgentRunEventsModule } from '../events/agent-run-events.module.js';
import { AgentRunStoreModule } from '../runs/agent-run-store.module.js';
import { RunLeaseController } from './run-lease.controller.js';
import { RunLifecycle } from './run-lifecycle.service.js';
import { RunSweeper } from './run-sweeper.service.js';

@Module({
  imports: [AgentRunStoreModule, AgentDispatchModule, AgentRunEventsModule],
  controllers: [RunLeaseController],
  providers: [RunLifecycle, RunSweeper],
  exports: [RunLifecycle, RunSweeper],
})
export class RunLifecycleModule {}
