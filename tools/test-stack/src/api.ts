import type { AgentRuntimeContext, RunStreamEvent } from '@naalya/agent-tools';

/** Every seeded demo user's password. */
export const DEMO_PASSWORD = 'naalya-demo';

/** A bearer token of a seeded demo user, from the server's /auth/login. */
export const login = async (baseUrl: string, email: string): Promise<string> => {
  const response = await fetch(`${baseUrl}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: DEMO_PASSWORD }),
  });
  if (!response.ok) throw new Error(`login ${email}: ${response.status}`);
  return ((await response.json()) as { accessToken: string }).accessToken;
};

/** A real runtime context: the server opens a run for the caller and mints its dispatch token. */
export const mintContext = async (baseUrl: string, token: string, body: Record<string, unknown> = {}): Promise<AgentRuntimeContext> => {
  const response = await fetch(`${baseUrl}/agent/context`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`context: ${response.status} ${await response.text()}`);
  return (await response.json()) as AgentRuntimeContext;
};

/**
 * One step of a conversation through both processes, as a user of the API has it: a thread, a run with one message,
 * and its server-sent events read until the server ends the stream (the worker finished the step) or `timeoutMs`.
 */
export const converse = async (baseUrl: string, token: string, message: string, timeoutMs: number): Promise<RunStreamEvent[]> => {
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
    .map((line) => JSON.parse(line.slice('data:'.length)) as RunStreamEvent);
};
