import { Module } from '@nestjs/common';
import { AgentDispatchModule } from '../dispatch/agent-dispatch.module.js';
import { AgentCallerGuard } from '../threads/agent-caller.guard.js';
import { McpTokensController } from './mcp-tokens.controller.js';
import { McpTokensService } from './mcp-tokens.service.js';

/** The MCP door's room: connected-app tokens (REST, for the signed-in user). */
@Module({
  imports: [AgentDispatchModule],
  controllers: [McpTokensController],
  providers: [AgentCallerGuard, McpTokensService],
  exports: [McpTokensService],
})
export class McpModule {}
