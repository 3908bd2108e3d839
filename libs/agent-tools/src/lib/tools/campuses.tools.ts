import { z } from 'zod';
import { defineAgentTool } from '../define-agent-tool.js';
import { resultId, resultName } from '../tool-result.js';

export const listCampusesTool = defineAgentTool({
  name: 'list_campuses',
  event: 'list.campuses',
  description: "List the campuses of the user's school. Offered only when the chat covers the whole school.",
  schema: z.strictObject({}),
  result: z.array(z.strictObject({ id: resultId('campus'), name: resultName() })),
  modes: ['school'],
});
