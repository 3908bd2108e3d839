import { Body, Controller, Get, Param, Post, Query } from '@nestjs/common';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { approveLessonPlanTool, createLessonPlanTool, listLessonPlansTool, listPendingLessonPlansTool } from '@naalya/agent-tools';
import { Audit } from '../core/audit/audit.decorator.js';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { parseDto } from '../core/http/parse-dto.js';
import type { LessonPlanEntity } from './lesson-plan.entity.js';
import { LessonPlanService } from './lesson-plan.service.js';

const planId = (result: unknown) => (result as LessonPlanEntity).id;

@Controller('lesson-plans')
export class LessonPlanController {
  constructor(private readonly lessonPlanService: LessonPlanService) {}

  /** Relationship: on the caller's own teaching assignment. */
  @Post()
  @Audit({ action: ActionAuditAction.CREATE, resourceType: AuditResourceType.LESSON_PLAN, resourceId: planId })
  create(@Body() body: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.lessonPlanService.create(parseDto(createLessonPlanTool.schema, body), jwt);
  }

  @Get('mine')
  listMine(@Query() query: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.lessonPlanService.listMine(parseDto(listLessonPlansTool.schema, query), jwt);
  }

  @Get('pending')
  @RequirePermissions(Action.LIST, Resource.LESSON_PLAN)
  listPending(@Query() query: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.lessonPlanService.listPending(parseDto(listPendingLessonPlansTool.schema, query), jwt);
  }

  @Post(':lessonPlanId/approve')
  @RequirePermissions(Action.APPROVE, Resource.LESSON_PLAN)
  @Audit({ action: ActionAuditAction.APPROVE, resourceType: AuditResourceType.LESSON_PLAN, resourceId: planId })
  approve(@Param('lessonPlanId') lessonPlanId: string, @Body() body: object, @CurrentUser() jwt: JwtPayload) {
    return this.lessonPlanService.approve(parseDto(approveLessonPlanTool.schema, { ...body, lessonPlanId }), jwt);
  }
}
