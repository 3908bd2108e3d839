import type { AgentRunEvent } from '@naalya/agent-tools';

/**
 * One step of a conversation through both processes, as a user of the API has it: a thread, a run with one message,
 * and its server-sent events read until the server ends the stream (the worker finished the step) or `timeoutMs`.
 */
export const converse = async (baseUrl: string, token: string, message: string, timeoutMs: number): Promise<AgentRunEvent[]> => {
  const signal = AbortSignal.timeout(timeoutMs);
  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
      signal,
    });
    if (!response.ok) throw new Error(`${path}: ${response.status}`);
    return (await response.json()) as T;
  };
  const { id: threadId } = await post<{ id: string }>('/agent/threads', {});
  const { runId } = await post<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message });
  const response = await fetch(`${baseUrl}/agent/threads/${threadId}/runs/${runId}/events`, { headers: { authorization: `Bearer ${token}` }, signal });
  const text = await response.text();
  return text
    .split('\n\n')
    .flatMap((block) => block.split('\n').filter((line) => line.startsWith('data:')))
    .map((line) => JSON.parse(line.slice('data:'.length)) as AgentRunEvent);
};

/** The step finished and every tool call in it got a result that is not an error. */
export const stepSucceeded = (events: AgentRunEvent[]): boolean => {
  const finished = events.some((event) => event.type === 'RUN_FINISHED');
  const results = events.filter((event): event is Extract<AgentRunEvent, { type: 'TOOL_CALL_RESULT' }> => event.type === 'TOOL_CALL_RESULT');
  return finished && results.length > 0 && results.every((event) => !('error' in (JSON.parse(event.content) as object)));
};
