import { z } from 'zod';
import { defineAgentTool } from '../define-agent-tool.js';

export const listSubjectsTool = defineAgentTool({
  name: 'list_subjects',
  event: 'list.subjects',
  description: 'List the subjects taught at the school, with their codes.',
  schema: z.strictObject({}),
  shared: true,
});
