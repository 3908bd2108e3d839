import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import {
  addDepartmentMemberTool,
  createDepartmentTool,
  deleteDepartmentTool,
  listDepartmentsTool,
  type AgentToolPayload,
} from '@naalya/agent-tools';
import type { DepartmentEntity } from '../../../departments/department.entity.js';
import { DepartmentService, type DepartmentMembership } from '../../../departments/department.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type ListDepartmentsPayload = AgentToolPayload[typeof listDepartmentsTool.event];
export type CreateDepartmentPayload = AgentToolPayload[typeof createDepartmentTool.event];
export type DeleteDepartmentPayload = AgentToolPayload[typeof deleteDepartmentTool.event];
export type AddDepartmentMemberPayload = AgentToolPayload[typeof addDepartmentMemberTool.event];

@Controller()
export class DepartmentToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly departmentService: DepartmentService,
  ) {}

  @MessagePattern(listDepartmentsTool.event)
  listDepartments(@Payload() payload: ListDepartmentsPayload) {
    return this.executor.execute(
      payload,
      listDepartmentsTool.schema,
      { auth: 'casl', gate: { action: Action.LIST, resource: Resource.DEPARTMENT } },
      (dto, jwt) => this.departmentService.list(dto, jwt),
    );
  }

  @MessagePattern(createDepartmentTool.event)
  createDepartment(@Payload() payload: CreateDepartmentPayload) {
    return this.executor.execute(
      payload,
      createDepartmentTool.schema,
      {
        auth: 'casl',
        gate: { action: Action.CREATE, resource: Resource.DEPARTMENT },
        audit: {
          action: ActionAuditAction.CREATE,
          resourceType: AuditResourceType.DEPARTMENT,
          resourceId: (result: DepartmentEntity) => result.id,
          resourceName: (result: DepartmentEntity) => result.name,
        },
      },
      (dto, jwt) => this.departmentService.create(dto, jwt),
    );
  }

  /** Relationship, not casl: the head of the department may delete it; DELETE DEPARTMENT is the service's fallback. */
  @MessagePattern(deleteDepartmentTool.event)
  deleteDepartment(@Payload() payload: DeleteDepartmentPayload) {
    return this.executor.execute(
      payload,
      deleteDepartmentTool.schema,
      {
        auth: 'relationship',
        scopeNote: 'Deleting needs you to head the department, or to be an administrator over it.',
        audit: {
          action: ActionAuditAction.DELETE,
          resourceType: AuditResourceType.DEPARTMENT,
          resourceId: (result: string) => result,
          target: (args) => args['departmentId'] as string,
        },
        confirmation: ({ departmentId }, jwt) => this.departmentService.confirmRemoval(departmentId, jwt),
      },
      ({ departmentId }, jwt) => this.departmentService.remove(departmentId, jwt),
    );
  }

  @MessagePattern(addDepartmentMemberTool.event)
  addDepartmentMember(@Payload() payload: AddDepartmentMemberPayload) {
    return this.executor.execute(
      payload,
      addDepartmentMemberTool.schema,
      {
        auth: 'relationship',
        scopeNote: 'Changing members needs you to head the department, or to be an administrator over it.',
        audit: {
          action: ActionAuditAction.ADD_MEMBER,
          resourceType: AuditResourceType.DEPARTMENT,
          resourceId: (result: DepartmentMembership) => result.departmentId,
        },
      },
      (dto, jwt) => this.departmentService.addMember(dto, jwt),
    );
  }
}
