import { Controller, Get } from '@nestjs/common';
import { Action, Resource, type CampusSummary } from '@naalya/access';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { CampusService } from './campus.service.js';

@Controller('campuses')
export class CampusController {
  constructor(private readonly campusService: CampusService) {}

  @Get()
  @RequirePermissions(Action.LIST, Resource.CAMPUS)
  list(@CurrentUser() jwt: JwtPayload): Promise<CampusSummary[]> {
    return this.campusService.list(jwt);
  }
}
