import type { IncomingMessage, ServerResponse } from 'node:http';
import { All, Controller, Get, Req, Res } from '@nestjs/common';
import { Public } from '../../core/auth/current-user.decorator.js';
import { McpDoorService } from './mcp-door.service.js';

/**
 * The MCP door's HTTP surface. Public to the login guard and outside the REST unit of work: the door authenticates its
 * own tokens (and only those), and each tool call runs in the unit of work execute() opens on the server's side of the hop.
 */
@Controller()
@Public()
export class McpDoorController {
  constructor(private readonly door: McpDoorService) {}

  @Get(['.well-known/oauth-protected-resource', '.well-known/oauth-protected-resource/mcp'])
  metadata() {
    return this.door.metadata();
  }

  /** Streamable HTTP: POST (requests), GET (the server's stream), DELETE (end the session). */
  @All('mcp')
  handle(@Req() request: IncomingMessage & { body?: unknown }, @Res() response: ServerResponse): Promise<void> {
    return this.door.handle(request, response);
  }
}
