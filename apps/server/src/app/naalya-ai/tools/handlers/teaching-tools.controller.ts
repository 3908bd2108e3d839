import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { assignSubjectTeacherTool, listMyTeachingAssignmentsTool, type AgentToolPayload } from '@naalya/agent-tools';
import type { TeachingAssignmentEntity } from '../../../teaching/teaching-assignment.entity.js';
import { TeachingService } from '../../../teaching/teaching.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type ListMyTeachingAssignmentsPayload = AgentToolPayload[typeof listMyTeachingAssignmentsTool.event];
export type AssignSubjectTeacherPayload = AgentToolPayload[typeof assignSubjectTeacherTool.event];

@Controller()
export class TeachingToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly teachingService: TeachingService,
  ) {}

  @MessagePattern(listMyTeachingAssignmentsTool.event)
  listMyTeachingAssignments(@Payload() payload: ListMyTeachingAssignmentsPayload) {
    return this.executor.execute(payload, listMyTeachingAssignmentsTool.schema, { auth: 'relationship' }, (dto, jwt) =>
      this.teachingService.listMine(dto, jwt),
    );
  }

  /** casl: assigning teachers is a seeded permission, the same pair as PUT /teaching-assignments. */
  @MessagePattern(assignSubjectTeacherTool.event)
  assignSubjectTeacher(@Payload() payload: AssignSubjectTeacherPayload) {
    return this.executor.execute(
      payload,
      assignSubjectTeacherTool.schema,
      {
        auth: 'casl',
        gate: { action: Action.ASSIGN, resource: Resource.TEACHING_ASSIGNMENT },
        audit: {
          action: ActionAuditAction.ASSIGN,
          resourceType: AuditResourceType.TEACHING_ASSIGNMENT,
          resourceId: (result: TeachingAssignmentEntity) => result.id,
        },
        confirmation: (dto, jwt) => this.teachingService.confirmAssignment(dto, jwt),
      },
      (dto, jwt) => this.teachingService.assign(dto, jwt),
    );
  }
}
