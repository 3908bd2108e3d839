import type { RunUsage } from '@naalya/agent-tools';
import type { BaseMessage } from '@langchain/core/messages';

/** About four characters a token: the usual rule of thumb for English text, and the model simulator's. */
const CHARS_PER_TOKEN = 4;

const charsOf = (message: BaseMessage): number => {
  const content = typeof message.content === 'string' ? message.content : JSON.stringify(message.content);
  const calls = 'tool_calls' in message && Array.isArray(message.tool_calls) ? JSON.stringify(message.tool_calls) : '';
  return content.length + calls.length;
};

const tokensOf = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN);

/**
 * The tokens of a model call when the model reports none: the scripted model, or a server that sends no usage data.
 * Counted from what was sent and what came back, so a school's budget still counts something real.
 */
export const estimatedUsage = (sent: readonly BaseMessage[], reply: BaseMessage): RunUsage => ({
  inputTokens: tokensOf(sent.reduce((sum, message) => sum + charsOf(message), 0)),
  outputTokens: tokensOf(charsOf(reply)),
});
