import { Controller } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { getSchoolBrandingTool, updateSchoolBrandingTool, type AgentToolPayload } from '@naalya/agent-tools';
import { BrandingService, type SchoolBranding } from '../../../branding/branding.service.js';
import { ToolExecutor } from '../tool-executor.js';

export type GetSchoolBrandingPayload = AgentToolPayload[typeof getSchoolBrandingTool.event];
export type UpdateSchoolBrandingPayload = AgentToolPayload[typeof updateSchoolBrandingTool.event];

/** Branding has nothing to gate beyond "this is your school": a relationship with its own sentence, not a gateless casl call. */
export const BRANDING_SCOPE_NOTE = "This is your own school's branding.";

@Controller()
export class BrandingToolsController {
  constructor(
    private readonly executor: ToolExecutor,
    private readonly brandingService: BrandingService,
  ) {}

  @MessagePattern(getSchoolBrandingTool.event)
  getSchoolBranding(@Payload() payload: GetSchoolBrandingPayload) {
    return this.executor.execute(payload, getSchoolBrandingTool.schema, { auth: 'relationship', scopeNote: BRANDING_SCOPE_NOTE }, (_args, jwt) =>
      this.brandingService.get(jwt),
    );
  }

  @MessagePattern(updateSchoolBrandingTool.event)
  updateSchoolBranding(@Payload() payload: UpdateSchoolBrandingPayload) {
    return this.executor.execute(
      payload,
      updateSchoolBrandingTool.schema,
      {
        auth: 'casl',
        gate: { action: Action.UPDATE, resource: Resource.BRANDING },
        audit: {
          action: ActionAuditAction.UPDATE,
          resourceType: AuditResourceType.BRANDING,
          resourceId: (result: SchoolBranding) => result.schoolId,
        },
      },
      (dto, jwt) => this.brandingService.update(dto, jwt),
    );
  }
}
