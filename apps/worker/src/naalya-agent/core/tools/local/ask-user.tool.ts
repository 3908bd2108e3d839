import { LOCAL_TOOL_NAMES, type AgentInterruptValue, type AgentSpeaker } from '@naalya/agent-tools';
import { interrupt } from '@langchain/langgraph';
import { tool, type ToolRuntime } from 'langchain';
import { z } from 'zod';
import { argsHash } from '../args-hash.js';

const askUserSchema = z.strictObject({
  question: z.string().trim().min(1).max(1_000).describe('One short, plain question for the user.'),
});
export type AskUserArgs = z.output<typeof askUserSchema>;

/** sha256 of the canonical ask_user arguments: the server binds an answer to exactly this question. */
export const askUserArgsHash = (args: AskUserArgs): string => argsHash(args);

// The run pauses in the checkpointer and resumes with the answer. On resume LangGraph runs this body again
// from its first line, so the question comes first and nothing with a side effect ever precedes it.
export const createAskUserTool = (askedBy: AgentSpeaker) =>
  tool(
    async (args: AskUserArgs, runtime: ToolRuntime): Promise<string> => {
      const question: AgentInterruptValue = {
        question: args.question,
        askedBy,
        ...(runtime.toolCallId ? { toolCallId: runtime.toolCallId } : {}),
        argsHash: askUserArgsHash(args),
      };
      const answer: unknown = interrupt(question);
      return JSON.stringify({ answer: typeof answer === 'string' ? answer : JSON.stringify(answer) });
    },
    {
      name: LOCAL_TOOL_NAMES.askUser,
      description:
        'Ask the user a question and wait for the answer. Use it when a required detail is missing or before a change the user should confirm. Ask one thing at a time.',
      schema: askUserSchema,
    },
  );
