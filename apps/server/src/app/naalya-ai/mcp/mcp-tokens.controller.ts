import { Body, Controller, Delete, Get, HttpCode, Inject, NotFoundException, Param, Post } from '@nestjs/common';
import type { ConnectedApp, ConnectedAppCreated } from '@naalya/access';
import { z } from 'zod';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { parseDto } from '../../core/http/parse-dto.js';
import { AgentCaller, AgentRoutes } from '../threads/agent-caller.guard.js';
import { McpTokensService } from './mcp-tokens.service.js';

/**
 * Connected apps: tokens for the MCP door, issued to the signed-in user (a login token). Agent routes (their own short
 * units of work as the caller), since a token row is the caller's own, like a thread.
 */
@Controller('mcp-tokens')
@AgentRoutes()
export class McpTokensController {
  private readonly createSchema: z.ZodType<{ name: string; campusId?: string; expiresInDays: number }>;

  constructor(
    private readonly tokens: McpTokensService,
    @Inject(SERVER_CONFIG) config: ServerConfig,
  ) {
    this.createSchema = z.strictObject({
      name: z.string().trim().min(1).max(100),
      /** Campus mode: every session of the token works in this campus; absent, the whole school. */
      campusId: z.guid().optional(),
      expiresInDays: z.number().int().min(1).max(config.MCP_TOKEN_MAX_DAYS),
    });
  }

  /** The token is in this answer only; the server keeps its hash. */
  @Post()
  create(@Body() body: unknown, @AgentCaller() caller: JwtPayload): Promise<ConnectedAppCreated> {
    return this.tokens.create(parseDto(this.createSchema, body), caller);
  }

  @Get()
  list(@AgentCaller() caller: JwtPayload): Promise<ConnectedApp[]> {
    return this.tokens.list(caller);
  }

  /** Sessions holding the token are refused from their next request; the direct run each holds ends with it. */
  @Delete(':id')
  @HttpCode(204)
  revoke(@Param('id') id: string, @AgentCaller() caller: JwtPayload): Promise<void> {
    if (!z.guid().safeParse(id).success) throw new NotFoundException('Connected app not found.');
    return this.tokens.revoke(id, caller);
  }
}
