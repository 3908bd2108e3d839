import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { z } from 'zod';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { parseDto } from '../../core/http/parse-dto.js';
import { AgentCaller, AgentRoutes } from './agent-caller.guard.js';
import { AgentThreadsService } from './agent-threads.service.js';

const mintContextSchema = z.strictObject({
  campusId: z.guid().optional(),
  targetSchoolId: z.guid().optional(),
});

@Controller('agent')
@AgentRoutes()
export class AgentContextController {
  constructor(private readonly threads: AgentThreadsService) {}

  /**
   * The runtime context a run for this caller carries, as the dispatch of runs mints it, for a run of its own that
   * is opened here (in a new thread, running, nothing sent to the worker): its dispatch token lets tools be called directly.
   */
  @Post('context')
  @HttpCode(200)
  mint(@Body() body: unknown, @AgentCaller() caller: JwtPayload) {
    return this.threads.openDirectRun(parseDto(mintContextSchema, body), caller);
  }
}
