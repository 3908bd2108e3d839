import { z } from 'zod';
import { defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

export const listSubjectsTool = defineAgentTool({
  name: 'list_subjects',
  event: 'list.subjects',
  description: 'List the subjects taught at the school, with their codes.',
  schema: z.strictObject({}),
  result: z.array(z.strictObject({ id: resultId('subject'), name: resultName(), code: z.string() })),
  shared: true,
});
