import { AbstractAgent, type BaseEvent, type Message } from '@ag-ui/client';
import { EventSchemas } from '@ag-ui/core/schemas';
import { createTestStack, readRunEvents, runEventStream, type StreamedRunEvent, type TestStack } from '@naalya/test-stack';
import { Observable } from 'rxjs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';

// Both services as processes, the scripted model pacing its chunks as a real model's tokens come, so a reply is still
// streaming while the client reads it.
const CHUNK_DELAY_MS = 25;

let stack: TestStack;

type Received = StreamedRunEvent;

const api = async <T>(token: string, path: string, body?: unknown): Promise<T> => {
  const response = await fetch(`${stack.server().baseUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
};

const serverSentEvents = (token: string, threadId: string, runId: string, lastEventId: number, signal: AbortSignal) =>
  runEventStream(stack.server().baseUrl, token, { threadId, runId }, { lastEventId, signal });

const readAll = (token: string, threadId: string, runId: string, lastEventId = 0) =>
  readRunEvents(stack.server().baseUrl, token, { threadId, runId }, { lastEventId, signal: AbortSignal.timeout(60_000) });

const start = async (token: string, message: string) => {
  const { id: threadId } = await api<{ id: string }>(token, '/agent/threads', {});
  const { runId } = await api<{ runId: string }>(token, `/agent/threads/${threadId}/runs`, { message });
  return { threadId, runId };
};

/** An AG-UI agent whose run is one of our runs' SSE streams: what a client written against AG-UI does with our events. */
class NaalyaRunAgent extends AbstractAgent {
  constructor(
    private readonly events: () => AsyncIterable<Received>,
    threadId: string,
  ) {
    super({ threadId });
  }

  run(): ReturnType<AbstractAgent['run']> {
    const events = new Observable<BaseEvent>((subscriber) => {
      void (async () => {
        for await (const { event } of this.events()) subscriber.next(event as BaseEvent);
        subscriber.complete();
      })().catch((error: unknown) => subscriber.error(error));
    });
    // @ag-ui/client brings its own copy of rxjs (7.8.1 beside the workspace's 7.8.2): the same class at run time, two
    // declarations for the compiler.
    return events as unknown as ReturnType<AbstractAgent['run']>;
  }
}

/**
 * One conversation step as a client written against AG-UI has it: the AG-UI agent runs over our SSE stream; then the
 * step's events read again, each checked against @ag-ui/core's schema (and unchanged by parsing).
 */
const throughAgUi = async (email: string, message: string) => {
  const token = await stack.login(email);
  const { threadId, runId } = await start(token, message);
  const agent = new NaalyaRunAgent(() => serverSentEvents(token, threadId, runId, 0, AbortSignal.timeout(60_000)), threadId);
  const { newMessages } = await agent.runAgent();
  const events = (await readAll(token, threadId, runId)).map(({ event }) => event);
  for (const event of events) expect(EventSchemas.parse(event)).toEqual(event);
  return { token, threadId, runId, agent, newMessages, events };
};

beforeAll(async () => {
  stack = await createTestStack({ name: 'stream' });
  await stack.startServer();
  await stack.startWorker({ AGENT_SCRIPTED_STREAM_DELAY_MS: String(CHUNK_DELAY_MS) });
}, 120_000);

afterAll(async () => {
  await stack?.teardown();
});

describe('tokens through SSE', () => {
  it('a reply streams in pieces as the model produces them, and a client that reconnects mid-reply with Last-Event-ID misses nothing and gets nothing twice', async () => {
    const token = await stack.login('admin@greenhill.school');
    const { threadId, runId } = await start(token, 'list departments');

    // First connection: dropped by the client after the third piece of the reply.
    const first: Received[] = [];
    const drop = new AbortController();
    try {
      for await (const item of serverSentEvents(token, threadId, runId, 0, AbortSignal.any([drop.signal, AbortSignal.timeout(60_000)]))) {
        first.push(item);
        if (first.filter(({ event }) => event.type === 'TEXT_MESSAGE_CONTENT').length === 3) drop.abort();
      }
    } catch (error) {
      if (!drop.signal.aborted) throw error;
    }
    expect(first.at(-1)?.event.type).toBe('TEXT_MESSAGE_CONTENT');

    // The browser's reconnect: Last-Event-ID is the last seq the client saw.
    const rest = await readAll(token, threadId, runId, first.at(-1)?.seq);
    const whole = await readAll(token, threadId, runId);

    const seqs = [...first, ...rest].map(({ seq }) => seq);
    expect(seqs).toEqual(whole.map(({ seq }) => seq));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, index) => index + 1));
    expect([...first, ...rest].map(({ event }) => event)).toEqual(whole.map(({ event }) => event));
    // The reconnect happened mid-reply: the rest of the text came on the second connection.
    expect(rest.filter(({ event }) => event.type === 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(0);

    const events = whole.map(({ event }) => event);
    const pieces = events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT');
    expect(pieces.length).toBeGreaterThan(5);
    // The pieces were stamped as the model made them, over the time the reply took.
    const stamps = pieces.map((event) => event.timestamp ?? 0);
    expect((stamps.at(-1) ?? 0) - (stamps[0] ?? 0)).toBeGreaterThanOrEqual(CHUNK_DELAY_MS * (stamps.length - 2));
    expect(pieces.map((event) => event.delta).join('')).toMatch(/^\[scripted model\] I found \d+ departments: .*Languages/);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });

    // Tool arguments streamed too, and their pieces are exactly the call's JSON arguments.
    const args = events.filter((event) => event.type === 'TOOL_CALL_ARGS');
    const call = events.find((event) => event.type === 'TOOL_CALL_START');
    expect(call).toMatchObject({ toolCallName: 'list_departments', metadata: { event: 'list.departments' } });
    expect(() => JSON.parse(args.map((event) => event.delta).join('') || '{}')).not.toThrow();
  });

  it('the first piece of a reply reaches the client before the model has produced its last', async () => {
    const token = await stack.login('admin@greenhill.school');
    const { threadId, runId } = await start(token, 'list departments');
    const received: Received[] = [];
    for await (const item of serverSentEvents(token, threadId, runId, 0, AbortSignal.timeout(60_000))) received.push(item);

    const firstPiece = received.find(({ event }) => event.type === 'TEXT_MESSAGE_CONTENT');
    const end = received.find(({ event }) => event.type === 'TEXT_MESSAGE_END');
    // Both clocks are this machine's: the worker stamps `timestamp` when it produces an event.
    expect(firstPiece?.receivedAt).toBeLessThan(end?.event.timestamp ?? 0);
  });
});

describe('a client written against AG-UI renders our runs', () => {
  // @ag-ui/client warns (console.warn, "[ag-ui][enforce] Removed unrecognised material ...") when it drops a field it does
  // not know: every event must reach it whole.
  let warn: MockInstance<typeof console.warn>;
  beforeEach(() => {
    warn = vi.spyOn(console, 'warn');
  });
  afterEach(() => {
    const agUiWarnings = warn.mock.calls.map((call) => String(call[0])).filter((line) => line.startsWith('[ag-ui]'));
    warn.mockRestore();
    expect(agUiWarnings).toEqual([]);
  });

  it('@ag-ui/core accepts every event of a run, and @ag-ui/client (verifyEvents, defaultApplyEvents) builds its messages from them', async () => {
    const { newMessages, events } = await throughAgUi('admin@greenhill.school', 'list departments');

    const text = events.flatMap((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? [event.delta] : [])).join('');
    const call = events.find((event) => event.type === 'TOOL_CALL_START');
    const assistant = newMessages.filter((message): message is Extract<Message, { role: 'assistant' }> => message.role === 'assistant');
    expect(assistant.flatMap((message) => message.toolCalls ?? []).map((toolCall) => toolCall.function.name)).toEqual(['list_departments']);
    expect(assistant.map((message) => message.content).filter(Boolean)).toEqual([text]);
    expect(newMessages.filter((message) => message.role === 'tool').map((message) => message.role === 'tool' && message.toolCallId)).toEqual([
      call?.type === 'TOOL_CALL_START' ? call.toolCallId : 'missing',
    ]);
  });

  it("a specialist's work is attributed the AG-UI way: SUBAGENT_STARTED names Angie, her messages and calls carry its subagentRunId", async () => {
    const { newMessages, events } = await throughAgUi('class.teacher@greenhill.school', 'take the register for S1 Kisasi, everyone present except Ivan');

    const started = events.filter((event) => event.type === 'SUBAGENT_STARTED');
    expect(started).toEqual([expect.objectContaining({ name: 'class_teacher', parentToolCallId: expect.any(String) })]);
    const subagentRunId = started[0]?.type === 'SUBAGENT_STARTED' ? started[0].subagentRunId : 'missing';
    const task = events.find((event) => event.type === 'TOOL_CALL_START' && event.toolCallName === 'task');
    expect(task).not.toHaveProperty('subagentRunId');
    expect(started[0]).toMatchObject({ parentToolCallId: task?.type === 'TOOL_CALL_START' ? task.toolCallId : 'missing' });
    const angiesCalls = events.filter((event) => event.type === 'TOOL_CALL_START' && event.toolCallName !== 'task');
    expect(angiesCalls.map((event) => event.type === 'TOOL_CALL_START' && [event.toolCallName, event.subagentRunId])).toEqual([
      ['list_my_classes', subagentRunId],
      ['list_class_students', subagentRunId],
      ['record_attendance', subagentRunId],
    ]);
    expect(events.filter((event) => event.type === 'SUBAGENT_FINISHED')).toEqual([
      expect.objectContaining({ subagentRunId, outcome: { type: 'success' } }),
    ]);
    expect(events.some((event) => 'speaker' in event)).toBe(false);
    const angies = newMessages.filter((message) => message.role === 'assistant' && message.subagentRunId === subagentRunId);
    expect(angies.length).toBeGreaterThan(0);
  });

  it('a confirmation reaches an AG-UI client as a typed interrupt: reason, question, the call, its argument fingerprint, an expiry; the snapshot before it', async () => {
    const { token, threadId, runId, agent, events } = await throughAgUi('dos@greenhill.school', 'approve the lesson plan Linear equations');

    expect(agent.pendingInterrupts).toEqual([
      expect.objectContaining({
        reason: 'confirmation',
        message: expect.stringMatching(/^Approve "[^"]+", .+'s .+ plan for /),
        toolCallId: expect.any(String),
        expiresAt: expect.any(String),
        subagentRunId: expect.any(String),
        metadata: expect.objectContaining({ askedBy: 'dos', argsHash: expect.stringMatching(/^[0-9a-f]{64}$/), confirmation: expect.objectContaining({ event: 'approve.lesson-plan' }) }),
      }),
    ]);
    const [interrupt] = agent.pendingInterrupts;
    expect(Date.parse(interrupt?.expiresAt ?? '')).toBeGreaterThan(Date.now());
    expect(events.slice(-2).map((event) => event.type)).toEqual(['MESSAGES_SNAPSHOT', 'RUN_FINISHED']);
    const snapshot = events.at(-2);
    expect(snapshot?.type === 'MESSAGES_SNAPSHOT' && snapshot.messages[0]).toMatchObject({ role: 'user', content: 'approve the lesson plan Linear equations' });
    // The server stores what the worker asked and nothing else answers it: the run's summary shows the same question.
    const detail = await api<{ runs: { id: string; interrupts: { interruptId: string; expiresAt: string | null }[] }[] }>(token, `/agent/threads/${threadId}`);
    expect(detail.runs.find((run) => run.id === runId)?.interrupts).toEqual([
      expect.objectContaining({ interruptId: interrupt?.id, expiresAt: interrupt?.expiresAt }),
    ]);
  });
});
