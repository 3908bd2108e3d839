import { Body, Controller, Delete, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';
import { ERROR_SENTENCES } from '@naalya/agent-tools';
import { z } from 'zod';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { withCode } from '../../core/http/error-code.js';
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
   * The runtime context a run for this caller carries, as the dispatch of runs mints it, for a direct run of its own
   * opened here (in a new thread, nothing sent to the worker): its dispatch token lets tools be called directly until
   * the run is closed (DELETE /agent/context/:runId) or the token expires.
   */
  @Post('context')
  @HttpCode(200)
  mint(@Body() body: unknown, @AgentCaller() caller: JwtPayload) {
    return this.threads.openDirectRun(parseDto(mintContextSchema, body), caller);
  }

  /** Closes a direct run (idempotent): its token is refused from then on, and its thread is free. */
  @Delete('context/:runId')
  @HttpCode(204)
  close(@Param('runId') runId: string, @AgentCaller() caller: JwtPayload): Promise<void> {
    if (!z.guid().safeParse(runId).success) throw withCode('RUN_NOT_FOUND', new NotFoundException(ERROR_SENTENCES.RUN_NOT_FOUND));
    return this.threads.closeDirectRun(runId, caller);
  }
}
