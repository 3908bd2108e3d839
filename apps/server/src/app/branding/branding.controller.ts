import { Body, Controller, Get, Patch } from '@nestjs/common';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { updateSchoolBrandingTool } from '@naalya/agent-tools';
import { Audit } from '../core/audit/audit.decorator.js';
import { CurrentUser } from '../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../core/auth/jwt-payload.js';
import { RequirePermissions } from '../core/authorization/require-permissions.decorator.js';
import { parseDto } from '../core/http/parse-dto.js';
import { BrandingService, type SchoolBranding } from './branding.service.js';

@Controller('branding')
export class BrandingController {
  constructor(private readonly brandingService: BrandingService) {}

  /** "This is your school": any member of staff reads their own school's branding. */
  @Get()
  get(@CurrentUser() jwt: JwtPayload) {
    return this.brandingService.get(jwt);
  }

  @Patch()
  @RequirePermissions(Action.UPDATE, Resource.BRANDING)
  @Audit({
    action: ActionAuditAction.UPDATE,
    resourceType: AuditResourceType.BRANDING,
    resourceId: (result) => (result as SchoolBranding).schoolId,
  })
  update(@Body() body: unknown, @CurrentUser() jwt: JwtPayload) {
    return this.brandingService.update(parseDto(updateSchoolBrandingTool.schema, body), jwt);
  }
}
