import { createHash } from 'node:crypto';
import { AGENT_SPEAKERS, type AgentSpeaker } from '@naalya/agent-tools';
import { interrupt } from '@langchain/langgraph';
import { tool, type ToolRuntime } from 'langchain';
import { z } from 'zod';

export const ASK_USER_TOOL_NAME = 'ask_user';

const askUserSchema = z.strictObject({
  question: z.string().trim().min(1).max(1_000).describe('One short, plain question for the user.'),
});
export type AskUserArgs = z.output<typeof askUserSchema>;

/** What an ask_user interrupt carries to the run's RUN_FINISHED event. */
export const askUserInterruptSchema = z.strictObject({
  question: z.string(),
  askedBy: z.enum(AGENT_SPEAKERS),
  toolCallId: z.string().optional(),
  argsHash: z.string(),
});
export type AskUserInterrupt = z.infer<typeof askUserInterruptSchema>;

// Keys sorted at every depth, so the same arguments always hash the same whatever order the model wrote them in.
const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, entry]) => entry !== undefined)
      .sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value);
};

/** sha256 of the canonical ask_user arguments: the server binds an answer to exactly this question. */
export const askUserArgsHash = (args: AskUserArgs): string => createHash('sha256').update(canonicalJson(args)).digest('hex');

// The run pauses in the checkpointer and resumes with the answer. On resume LangGraph runs this body again
// from its first line, so the question comes first and nothing with a side effect ever precedes it.
export const createAskUserTool = (askedBy: AgentSpeaker) =>
  tool(
    async (args: AskUserArgs, runtime: ToolRuntime): Promise<string> => {
      const question: AskUserInterrupt = {
        question: args.question,
        askedBy,
        ...(runtime.toolCallId ? { toolCallId: runtime.toolCallId } : {}),
        argsHash: askUserArgsHash(args),
      };
      const answer: unknown = interrupt(question);
      return JSON.stringify({ answer: typeof answer === 'string' ? answer : JSON.stringify(answer) });
    },
    {
      name: ASK_USER_TOOL_NAME,
      description:
        'Ask the user a question and wait for the answer. Use it when a required detail is missing or before a change the user should confirm. Ask one thing at a time.',
      schema: askUserSchema,
    },
  );
