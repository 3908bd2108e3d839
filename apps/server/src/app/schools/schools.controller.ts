import { Body, Controller, Get, Patch } from '@nestjs/common';
import { Action, ActionAuditAction, AuditResourceType, Resource, type SchoolSummary } from '@naalya/access';
import { z } from 'zod';
import { Audit } from '../core/audit/audit.decorator.js';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { parseDto } from '../core/http/parse-dto.js';
import { SchoolsService } from './schools.service.js';

const updateSchoolSchema = z.strictObject({ timeZone: z.string().trim().min(1).max(64) });

@Controller()
export class SchoolsController {
  constructor(private readonly schools: SchoolsService) {}

  /** The schools a platform administrator picks from (name and time zone); anyone else is refused. */
  @Get('schools')
  list(@CurrentUser() caller: JwtPayload): Promise<SchoolSummary[]> {
    return this.schools.list(caller);
  }

  /** The caller's school's settings (a platform administrator: the school chosen for the session). */
  @Patch('school')
  @RequirePermissions(Action.UPDATE, Resource.SCHOOL)
  @Audit({ action: ActionAuditAction.UPDATE, resourceType: AuditResourceType.SCHOOL, resourceId: (result) => (result as SchoolSummary).id })
  update(@Body() body: unknown): Promise<SchoolSummary> {
    return this.schools.update(parseDto(updateSchoolSchema, body));
  }
}
