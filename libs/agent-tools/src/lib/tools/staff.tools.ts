import { z } from 'zod';
import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

export const listStaffTool = defineAgentTool({
  name: 'list_staff',
  event: 'list.staff',
  description:
    'List the staff of the school, or of one campus, with their names, email addresses and campus. Only staff the user may see are returned.',
  schema: z.strictObject({ campusId: campusIdArg }),
  result: z.array(
    z.strictObject({
      id: resultId('staff'),
      fullName: resultName(),
      email: z.string(),
      campusId: resultId('campus').nullable(),
      campusName: z.string().nullable(),
      isActive: z.boolean(),
    }),
  ),
  campusScoped: true,
});
