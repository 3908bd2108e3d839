import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { z } from 'zod';
import { CurrentUser } from '../../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { parseDto } from '../../core/http/parse-dto.js';
import { AgentContextService } from './agent-context.service.js';

const mintContextSchema = z.strictObject({
  campusId: z.guid().optional(),
  targetSchoolId: z.guid().optional(),
});

@Controller('agent')
export class AgentContextController {
  constructor(private readonly agentContextService: AgentContextService) {}

  /** The runtime context a run for this caller would carry; the dispatch of runs mints the same. */
  @Post('context')
  @HttpCode(200)
  mint(@Body() body: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.agentContextService.mint(parseDto(mintContextSchema, body), jwt);
  }
}
