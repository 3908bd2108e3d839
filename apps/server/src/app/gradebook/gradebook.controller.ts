import { Body, Controller, Get, Post, Query } from '@nestjs/common';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { getGradebookTool, getResultsSummaryTool, recordMarksTool } from '@naalya/agent-tools';
import { Audit } from '../core/audit/audit.decorator.js';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { parseDto } from '../core/http/parse-dto.js';
import { GradebookService, type MarksRecorded } from './gradebook.service.js';

@Controller()
export class GradebookController {
  constructor(private readonly gradebookService: GradebookService) {}

  /** Relationship: only the subjects the caller teaches in the class. */
  @Get('gradebook')
  get(@Query() query: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.gradebookService.getGradebook(parseDto(getGradebookTool.schema, query), jwt);
  }

  @Post('gradebook/marks')
  @Audit({
    action: ActionAuditAction.RECORD,
    resourceType: AuditResourceType.MARKS,
    resourceId: (result) => (result as MarksRecorded).teachingAssignmentId,
  })
  recordMarks(@Body() body: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.gradebookService.recordMarks(parseDto(recordMarksTool.schema, body), jwt);
  }

  @Get('results/summary')
  @RequirePermissions(Action.READ, Resource.RESULT)
  resultsSummary(@Query() query: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.gradebookService.resultsSummary(parseDto(getResultsSummaryTool.schema, query), jwt);
  }
}
