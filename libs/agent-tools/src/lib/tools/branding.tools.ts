import { z } from 'zod';
import { defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

const branding = z.strictObject({
  schoolId: resultId('school'),
  displayName: resultName(),
  motto: z.string().nullable(),
  primaryColor: z.string(),
  logoUrl: z.string().nullable(),
});

export const getSchoolBrandingTool = defineAgentTool({
  name: 'get_school_branding',
  event: 'get.branding',
  description: "Get the user's school branding: its display name, motto, main colour and logo address.",
  schema: z.strictObject({}),
  result: branding,
});

export const updateSchoolBrandingTool = defineAgentTool({
  name: 'update_school_branding',
  event: 'update.branding',
  description: "Change the user's school branding. Only the fields given change; administrators only.",
  schema: z
    .strictObject({
      displayName: z.string().trim().min(2).max(120).optional().describe('The name shown across the platform.'),
      motto: z.string().trim().max(200).nullable().optional().describe('The school motto, or null to remove it.'),
      primaryColor: z
        .string()
        .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour like #1b7f3b')
        .optional()
        .describe('The main colour as #rrggbb.'),
      logoUrl: z.url({ protocol: /^https$/ }).max(500).nullable().optional().describe('An https address of the logo, or null to remove it.'),
    })
    .refine((changes) => Object.keys(changes).length > 0, 'give at least one field to change'),
  result: branding,
  streamOnSuccess: () => ({ name: 'branding.updated', label: 'School branding updated', resourceType: 'branding' }),
});
