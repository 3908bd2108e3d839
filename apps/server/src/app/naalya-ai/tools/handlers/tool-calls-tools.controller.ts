import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { getToolCallOutcomeTool, type AgentToolPayload } from '@naalya/agent-tools';
import { ToolCallOutcomeService } from '../tool-call-outcome.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type GetToolCallOutcomePayload = AgentToolPayload[typeof getToolCallOutcomeTool.event];

export const TOOL_CALL_OUTCOME_SCOPE_NOTE = 'This covers only changes you asked for yourself.';

@Controller()
export class ToolCallsToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly outcomes: ToolCallOutcomeService,
  ) {}

  @MessagePattern(getToolCallOutcomeTool.event)
  getToolCallOutcome(@Payload() payload: GetToolCallOutcomePayload) {
    return this.executor.execute(payload, getToolCallOutcomeTool.schema, { auth: 'relationship', scopeNote: TOOL_CALL_OUTCOME_SCOPE_NOTE }, (dto, jwt) =>
      this.outcomes.get(dto, jwt),
    );
  }
}
