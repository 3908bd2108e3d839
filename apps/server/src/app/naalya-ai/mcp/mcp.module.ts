import { Module } from '@nestjs/common';
import { AgentDispatchModule } from '../dispatch/agent-dispatch.module.js';
import { AgentCallerGuard } from '../threads/agent-caller.guard.js';
import { AgentThreadsModule } from '../threads/agent-threads.module.js';
import { NaalyaAiToolsModule } from '../tools/naalya-ai-tools.module.js';
import { McpDoorController } from './mcp-door.controller.js';
import { McpDoorService } from './mcp-door.service.js';
import { McpToolPublisher } from './mcp-tool-publisher.service.js';
import { McpTokensController } from './mcp-tokens.controller.js';
import { McpTokensService } from './mcp-tokens.service.js';

/** The MCP door's room: connected-app tokens (REST, for the signed-in user) and the door (Streamable HTTP at /mcp). */
@Module({
  imports: [AgentDispatchModule, AgentThreadsModule, NaalyaAiToolsModule],
  controllers: [McpTokensController, McpDoorController],
  providers: [AgentCallerGuard, McpTokensService, McpDoorService, McpToolPublisher],
  exports: [McpTokensService],
})
export class McpModule {}
