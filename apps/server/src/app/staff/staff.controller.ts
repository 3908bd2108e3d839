import { Controller, Get, Query } from '@nestjs/common';
import { Action, Resource } from '@naalya/access';
import { listStaffTool } from '@naalya/agent-tools';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { parseDto } from '../core/http/parse-dto.js';
import { StaffService } from './staff.service.js';

@Controller('staff')
export class StaffController {
  constructor(private readonly staffService: StaffService) {}

  @Get()
  @RequirePermissions(Action.LIST, Resource.STAFF)
  list(@Query() query: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.staffService.list(parseDto(listStaffTool.schema, query), jwt);
  }
}
