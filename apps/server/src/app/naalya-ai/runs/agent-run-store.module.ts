import { Module } from '@nestjs/common';
import { AgentRunStore } from './agent-run-store.service.js';

@Module({
  providers: [AgentRunStore],
  exports: [AgentRunStore],
})
export class AgentRunStoreModule {}
