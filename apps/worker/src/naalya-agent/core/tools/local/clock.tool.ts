import { LOCAL_TOOL_NAMES } from '@naalya/agent-tools';
import { tool } from 'langchain';
import { z } from 'zod';

// A local tool: it runs in the worker, crosses no hop and reads nothing about the user.
export const clockTool = tool(
  async () => {
    const now = new Date();
    return JSON.stringify({
      now: now.toISOString(),
      weekday: now.toLocaleDateString('en-GB', { weekday: 'long', timeZone: 'UTC' }),
      timeZone: 'UTC',
    });
  },
  {
    name: LOCAL_TOOL_NAMES.clock,
    description: 'Get the current date and time (UTC). Use it for anything that depends on today, such as terms or deadlines.',
    schema: z.strictObject({}),
  },
);
