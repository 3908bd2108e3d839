import { createHash } from 'node:crypto';
import { AGENT_TOOL_ROLES, type AgentSpeaker } from '@naalya/agent-tools';
import { MemorySaver } from '@langchain/langgraph';
import { AIMessage, HumanMessage, createAgent, fakeModel } from 'langchain';
import { describe, expect, it } from 'vitest';
import { askUserArgsHash, createAskUserTool } from './ask-user.tool.js';

/** The question a graph holding this asker's ask_user pauses with, when the model asks "Which class?". */
const pausedQuestionOf = async (askedBy: AgentSpeaker) => {
  const askUser = createAskUserTool(askedBy);
  const config = { configurable: { thread_id: `thread-ask-${askedBy}` } };
  const agent = createAgent({
    model: fakeModel()
      .respondWithTools([{ name: askUser.name, args: { question: 'Which class?' }, id: 'tc-ask' }])
      .respond(new AIMessage('Done.')),
    tools: [askUser],
    checkpointer: new MemorySaver(),
  });
  await agent.invoke({ messages: [new HumanMessage('Record the register')] }, config);
  return (await agent.graph.getState(config)).tasks.flatMap((task) => task.interrupts ?? []).map((pending) => pending.value);
};

describe('ask_user', () => {
  it('argsHash is the sha256 of the canonical JSON of its arguments', () => {
    expect(askUserArgsHash({ question: 'Which class?' })).toBe(createHash('sha256').update('{"question":"Which class?"}').digest('hex'));
  });

  it.each<AgentSpeaker>(['rover', ...AGENT_TOOL_ROLES])(
    'is one tool per asker with the same name, so a specialist question is stamped with its role (%s)',
    async (askedBy) => {
      expect(createAskUserTool(askedBy).name).toBe('ask_user');
      expect(createAskUserTool(askedBy).description).not.toContain('\u2014');
      expect(await pausedQuestionOf(askedBy)).toEqual([
        { question: 'Which class?', askedBy, toolCallId: 'tc-ask', argsHash: askUserArgsHash({ question: 'Which class?' }) },
      ]);
    },
  );
});
