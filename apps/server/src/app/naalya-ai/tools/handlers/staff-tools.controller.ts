import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Action, Resource } from '@naalya/access';
import { listStaffTool, type AgentToolPayload } from '@naalya/agent-tools';
import { StaffService } from '../../../staff/staff.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type ListStaffPayload = AgentToolPayload[typeof listStaffTool.event];

@Controller()
export class StaffToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly staffService: StaffService,
  ) {}

  @MessagePattern(listStaffTool.event)
  listStaff(@Payload() payload: ListStaffPayload) {
    return this.executor.execute(
      payload,
      listStaffTool.schema,
      { auth: 'casl', gate: { action: Action.LIST, resource: Resource.STAFF } },
      (dto, jwt) => this.staffService.list(dto, jwt),
    );
  }
}
