import { Controller, Get, Param } from '@nestjs/common';
import { getToolCallOutcomeTool } from '@naalya/agent-tools';
import { CurrentUser } from '../../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { parseDto } from '../../core/http/parse-dto.js';
import { ToolCallOutcomeService } from './tool-call-outcome.service.js';

/** Relationship route: the caller's own calls only (the service filters on the caller). */
@Controller('tool-calls')
export class ToolCallOutcomeController {
  constructor(private readonly outcomes: ToolCallOutcomeService) {}

  @Get(':callId')
  get(@Param('callId') callId: string, @CurrentUser() jwt: JwtPayload) {
    return this.outcomes.get(parseDto(getToolCallOutcomeTool.schema, { callId }), jwt);
  }
}
