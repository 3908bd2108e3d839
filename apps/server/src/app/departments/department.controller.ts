import { Body, Controller, Delete, Get, Param, Post, Query } from '@nestjs/common';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { addDepartmentMemberTool, createDepartmentTool, deleteDepartmentTool, listDepartmentsTool } from '@naalya/agent-tools';
import { Audit } from '../core/audit/audit.decorator.js';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { parseDto } from '../core/http/parse-dto.js';
import type { DepartmentEntity } from './department.entity.js';
import { DepartmentService } from './department.service.js';

@Controller('departments')
export class DepartmentController {
  constructor(private readonly departmentService: DepartmentService) {}

  @Get()
  @RequirePermissions(Action.LIST, Resource.DEPARTMENT)
  list(@Query() query: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.departmentService.list(parseDto(listDepartmentsTool.schema, query), jwt);
  }

  @Post()
  @RequirePermissions(Action.CREATE, Resource.DEPARTMENT)
  @Audit({
    action: ActionAuditAction.CREATE,
    resourceType: AuditResourceType.DEPARTMENT,
    resourceId: (result) => (result as DepartmentEntity).id,
  })
  create(@Body() body: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.departmentService.create(parseDto(createDepartmentTool.schema, body), jwt);
  }

  /** Relationship route (head of department, or DELETE DEPARTMENT inside the service): no @RequirePermissions. */
  @Delete(':departmentId')
  @Audit({
    action: ActionAuditAction.DELETE,
    resourceType: AuditResourceType.DEPARTMENT,
    resourceId: (result) => (result as { id: string }).id,
    target: (params) => params['departmentId'],
  })
  async remove(@Param() params: unknown, @CurrentUser() jwt: JwtPayload) {
    const { departmentId } = parseDto(deleteDepartmentTool.schema, params);
    return { id: await this.departmentService.remove(departmentId, jwt) };
  }

  @Post(':departmentId/members')
  @Audit({
    action: ActionAuditAction.ADD_MEMBER,
    resourceType: AuditResourceType.DEPARTMENT,
    resourceId: (_result, params) => params['departmentId'],
  })
  addMember(@Param('departmentId') departmentId: string, @Body() body: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.departmentService.addMember(
      parseDto(addDepartmentMemberTool.schema, { ...(body as object), departmentId }),
      jwt,
    );
  }
}
