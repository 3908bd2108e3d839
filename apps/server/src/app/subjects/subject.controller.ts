import { Controller, Get } from '@nestjs/common';
import { Action, Resource } from '@naalya/access';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { SubjectService } from './subject.service.js';

@Controller('subjects')
export class SubjectController {
  constructor(private readonly subjectService: SubjectService) {}

  @Get()
  @RequirePermissions(Action.LIST, Resource.SUBJECT)
  list(@CurrentUser() jwt: JwtPayload) {
    return this.subjectService.list(jwt);
  }
}
