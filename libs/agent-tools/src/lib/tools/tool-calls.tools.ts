import { z } from 'zod';
import { defineAgentTool } from '../define-agent-tool.js';
import { resultId } from '../tool-result.js';

export const getToolCallOutcomeTool = defineAgentTool({
  name: 'get_tool_call_outcome',
  event: 'get.tool-call-outcome',
  description:
    'Check whether one of your own earlier changes was saved, by the call id an "outcome unknown" message gave you. ' +
    'Returns the saved result if the change completed; otherwise says no completed change with that id was found for you.',
  schema: z.strictObject({
    callId: z.string().min(8).max(128).describe('The call id from the "outcome unknown" message.'),
  }),
  // The saved result is whatever the earlier tool returned: that tool's own result schema describes it, not this one.
  result: z.strictObject({
    callId: resultId('tool_call', z.string()),
    event: z.string(),
    status: z.literal('completed'),
    result: z.unknown(),
    recordedAt: z.iso.datetime(),
  }),
  shared: true,
});
