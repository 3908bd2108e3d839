import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import {
  approveLessonPlanTool,
  createLessonPlanTool,
  listLessonPlansTool,
  listPendingLessonPlansTool,
  type AgentToolPayload,
} from '@naalya/agent-tools';
import type { LessonPlanEntity } from '../../../lesson-plans/lesson-plan.entity.js';
import { LessonPlanService } from '../../../lesson-plans/lesson-plan.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type CreateLessonPlanPayload = AgentToolPayload[typeof createLessonPlanTool.event];
export type ListLessonPlansPayload = AgentToolPayload[typeof listLessonPlansTool.event];
export type ListPendingLessonPlansPayload = AgentToolPayload[typeof listPendingLessonPlansTool.event];
export type ApproveLessonPlanPayload = AgentToolPayload[typeof approveLessonPlanTool.event];

const LESSON_PLAN_AUDIT = {
  resourceType: AuditResourceType.LESSON_PLAN,
  resourceId: (result: LessonPlanEntity) => result.id,
  resourceName: (result: LessonPlanEntity) => result.title,
};

@Controller()
export class LessonPlansToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly lessonPlanService: LessonPlanService,
  ) {}

  /** Relationship: only on the caller's own teaching assignment. */
  @MessagePattern(createLessonPlanTool.event)
  createLessonPlan(@Payload() payload: CreateLessonPlanPayload) {
    return this.executor.execute(
      payload,
      createLessonPlanTool.schema,
      { auth: 'relationship', audit: { action: ActionAuditAction.CREATE, ...LESSON_PLAN_AUDIT } },
      (dto, jwt) => this.lessonPlanService.create(dto, jwt),
    );
  }

  @MessagePattern(listLessonPlansTool.event)
  listLessonPlans(@Payload() payload: ListLessonPlansPayload) {
    return this.executor.execute(
      payload,
      listLessonPlansTool.schema,
      { auth: 'relationship', scopeNote: 'These are your own lesson plans.' },
      (dto, jwt) => this.lessonPlanService.listMine(dto, jwt),
    );
  }

  @MessagePattern(listPendingLessonPlansTool.event)
  listPendingLessonPlans(@Payload() payload: ListPendingLessonPlansPayload) {
    return this.executor.execute(
      payload,
      listPendingLessonPlansTool.schema,
      { auth: 'casl', gate: { action: Action.LIST, resource: Resource.LESSON_PLAN } },
      (dto, jwt) => this.lessonPlanService.listPending(dto, jwt),
    );
  }

  @MessagePattern(approveLessonPlanTool.event)
  approveLessonPlan(@Payload() payload: ApproveLessonPlanPayload) {
    return this.executor.execute(
      payload,
      approveLessonPlanTool.schema,
      {
        auth: 'casl',
        gate: { action: Action.APPROVE, resource: Resource.LESSON_PLAN },
        audit: { action: ActionAuditAction.APPROVE, ...LESSON_PLAN_AUDIT },
        confirmation: (dto, jwt) => this.lessonPlanService.confirmApproval(dto, jwt),
      },
      (dto, jwt) => this.lessonPlanService.approve(dto, jwt),
    );
  }
}
