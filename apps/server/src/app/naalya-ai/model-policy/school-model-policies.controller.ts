import { Body, Controller, Get, NotFoundException, Param, Put } from '@nestjs/common';
import { ActionAuditAction, AuditResourceType } from '@naalya/access';
import type { SchoolModelPolicy } from '@naalya/agent-tools';
import { z } from 'zod';
import { Audit } from '../../core/audit/audit.decorator.js';
import { CurrentUser } from '../../core/auth/current-user.decorator.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { MODEL_LIST_LIMIT, MODEL_LIST_SYNTAX, parseModelEntries } from '../../core/config/model-list.js';
import { parseDto } from '../../core/http/parse-dto.js';
import { SchoolModelPolicies } from './school-model-policies.service.js';

const allowedModels = z
  .array(z.string().max(260))
  .max(MODEL_LIST_LIMIT)
  .transform((entries, context) => {
    const parsed = parseModelEntries(entries);
    if (parsed.ok) return parsed.list === '*' ? ['*'] : [...parsed.list];
    context.addIssue({ code: 'custom', message: `each entry must be "provider" or "provider:model", or the list ["*"] alone; ${parsed.reason}` });
    return z.NEVER;
  })
  .nullable()
  .describe(MODEL_LIST_SYNTAX);
const modelPolicySchema = z.strictObject({
  allowedModels,
  dailyTokenBudget: z.number().int().min(1).max(1e15).nullable(),
});

const schoolIdParam = (value: string): string => {
  if (!z.guid().safeParse(value).success) throw new NotFoundException('School not found.');
  return value;
};

/**
 * A school's language model choices, for platform administrators: which models may see its data and how many tokens
 * it may use per UTC day. A change is made in the school chosen for the session (the target school header, as every
 * platform administrator's write) and audited there.
 */
@Controller('platform/schools')
export class SchoolModelPoliciesController {
  constructor(private readonly policies: SchoolModelPolicies) {}

  @Get(':schoolId/model-policy')
  view(@Param('schoolId') schoolId: string, @CurrentUser() caller: JwtPayload): Promise<SchoolModelPolicy> {
    return this.policies.view(schoolIdParam(schoolId), caller);
  }

  @Put(':schoolId/model-policy')
  @Audit({ action: ActionAuditAction.UPDATE, resourceType: AuditResourceType.MODEL_POLICY, resourceId: (result) => (result as SchoolModelPolicy).schoolId })
  update(@Param('schoolId') schoolId: string, @Body() body: unknown, @CurrentUser() caller: JwtPayload): Promise<SchoolModelPolicy> {
    return this.policies.update(schoolIdParam(schoolId), parseDto(modelPolicySchema, body), caller);
  }
}
