import { Body, Controller, Get, Put, Query } from '@nestjs/common';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { assignSubjectTeacherTool, listMyTeachingAssignmentsTool } from '@naalya/agent-tools';
import { Audit } from '../core/audit/audit.decorator.js';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { parseDto } from '../core/http/parse-dto.js';
import type { TeachingAssignmentEntity } from './teaching-assignment.entity.js';
import { TeachingService } from './teaching.service.js';

@Controller('teaching-assignments')
export class TeachingController {
  constructor(private readonly teachingService: TeachingService) {}

  @Get('mine')
  listMine(@Query() query: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.teachingService.listMine(parseDto(listMyTeachingAssignmentsTool.schema, query), jwt);
  }

  @Put()
  @RequirePermissions(Action.ASSIGN, Resource.TEACHING_ASSIGNMENT)
  @Audit({
    action: ActionAuditAction.ASSIGN,
    resourceType: AuditResourceType.TEACHING_ASSIGNMENT,
    resourceId: (result) => (result as TeachingAssignmentEntity).id,
  })
  assign(@Body() body: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.teachingService.assign(parseDto(assignSubjectTeacherTool.schema, body), jwt);
  }
}
