import type { RunStreamEvent } from '@naalya/agent-tools';

// One step of a conversation through both processes, as a user of the API has it.
export { converse } from '@naalya/test-stack';

/** The step finished and every tool call in it got a result that is not an error. */
export const stepSucceeded = (events: RunStreamEvent[]): boolean => {
  const finished = events.some((event) => event.type === 'RUN_FINISHED');
  const results = events.filter((event): event is Extract<RunStreamEvent, { type: 'TOOL_CALL_RESULT' }> => event.type === 'TOOL_CALL_RESULT');
  return finished && results.length > 0 && results.every((event) => !('error' in (JSON.parse(event.content) as object)));
};
