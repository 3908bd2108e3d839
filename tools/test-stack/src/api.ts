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

/** One server-sent event of a run: its seq (the SSE id), the event in AG-UI's shape, and when this process read it. */
export type StreamedRunEvent = { seq: number; event: RunStreamEvent; receivedAt: number };

/**
 * A run's server-sent events one by one as they arrive, until the server ends the stream (the step finished) or
 * `signal` aborts (the read then throws). `lastEventId` resumes after that seq, as a reconnecting browser does.
 */
export async function* runEventStream(
  baseUrl: string,
  token: string,
  run: { threadId: string; runId: string },
  options: { signal: AbortSignal; lastEventId?: number },
): AsyncGenerator<StreamedRunEvent> {
  const response = await fetch(`${baseUrl}/agent/threads/${run.threadId}/runs/${run.runId}/events`, {
    headers: { authorization: `Bearer ${token}`, ...(options.lastEventId ? { 'last-event-id': String(options.lastEventId) } : {}) },
    signal: options.signal,
  });
  if (response.status !== 200 || !response.body) throw new Error(`events of run ${run.runId}: ${response.status} ${await response.text()}`);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffered.indexOf('\n\n')) >= 0) {
        const block = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const fields = Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]));
        if (fields['id'] === undefined || fields['data'] === undefined) continue;
        yield { seq: Number(fields['id']), event: JSON.parse(fields['data']) as RunStreamEvent, receivedAt: Date.now() };
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/** Every server-sent event of a run until the server ends the stream (see runEventStream). */
export const readRunEvents = async (
  baseUrl: string,
  token: string,
  run: { threadId: string; runId: string },
  options: { signal: AbortSignal; lastEventId?: number },
): Promise<StreamedRunEvent[]> => {
  const received: StreamedRunEvent[] = [];
  for await (const item of runEventStream(baseUrl, token, run, options)) received.push(item);
  return received;
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
  return (await readRunEvents(baseUrl, token, { threadId, runId }, { signal })).map(({ event }) => event);
};
