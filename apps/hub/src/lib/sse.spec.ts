import { agentRunEventSchema, type AgentRunEvent } from '@naalya/agent-tools';
import { describe, expect, it, vi } from 'vitest';
import { emptyThread, threadReducer } from './run-view';
import { HttpError, streamRunEvents, type RunStreamEvent } from './sse';

const frame = (seq: number, type: string, data: unknown = { type }) => `id: ${seq}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;

/** A response whose body arrives in the given pieces (bytes may split anywhere, even inside a character). */
const streamed = (pieces: (string | Uint8Array)[], options: { failAfter?: boolean } = {}) => {
  const encoder = new TextEncoder();
  const queue = [...pieces];
  // Pulled one piece at a time, so a failure comes after every piece was read (as a dropped connection does).
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      const piece = queue.shift();
      if (piece !== undefined) controller.enqueue(typeof piece === 'string' ? encoder.encode(piece) : piece);
      else if (options.failAfter) controller.error(new TypeError('network error'));
      else controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
};

const collect = () => {
  const events: RunStreamEvent[] = [];
  return { events, onEvent: (event: RunStreamEvent) => events.push(event) };
};

const noSleep = () => Promise.resolve();

describe('streamRunEvents (fetch + eventsource-parser)', () => {
  it('sends the Bearer token, parses every event with its seq, and stops after RUN_FINISHED', async () => {
    const fetchImpl = vi.fn(async (_url: RequestInfo | URL, _init?: RequestInit) =>
      streamed(['retry: 3000\n\n', frame(1, 'RUN_STARTED'), ': keep-alive\n\n', frame(2, 'TEXT_MESSAGE_CONTENT', { delta: 'hi' }), frame(3, 'RUN_FINISHED')]),
    );
    const { events, onEvent } = collect();

    const outcome = await streamRunEvents({ url: '/events', token: 'T', onEvent, fetchImpl, sleep: noSleep });

    expect(outcome).toEqual({ lastEventId: 3, finished: true });
    expect(events.map((event) => [event.seq, event.type])).toEqual([
      [1, 'RUN_STARTED'],
      [2, 'TEXT_MESSAGE_CONTENT'],
      [3, 'RUN_FINISHED'],
    ]);
    expect(events[1]?.data).toEqual({ delta: 'hi' });
    const headers = fetchImpl.mock.calls[0]?.[1]?.headers as Record<string, string>;
    expect(headers['authorization']).toBe('Bearer T');
    expect(headers['last-event-id']).toBeUndefined();
    expect(fetchImpl).toHaveBeenCalledTimes(1);
  });

  it('reassembles events split across chunks, even inside a multi-byte character', async () => {
    const bytes = new TextEncoder().encode(frame(1, 'TEXT_MESSAGE_CONTENT', { delta: 'Kampala, Uganda: café ✓' }) + frame(2, 'RUN_FINISHED'));
    const pieces = [bytes.slice(0, 7), bytes.slice(7, 60), bytes.slice(60, 61), bytes.slice(61)];
    const { events, onEvent } = collect();

    await streamRunEvents({ url: '/events', token: 'T', onEvent, fetchImpl: async () => streamed(pieces), sleep: noSleep });

    expect(events[0]?.data).toEqual({ delta: 'Kampala, Uganda: café ✓' });
    expect(events).toHaveLength(2);
  });

  it('reconnects after a dropped connection with Last-Event-ID and never reports an event twice', async () => {
    const responses = [
      streamed([frame(1, 'RUN_STARTED'), frame(2, 'TOOL_CALL_START')], { failAfter: true }),
      // The server replays after Last-Event-ID; a stray repeat is dropped by seq anyway.
      streamed([frame(2, 'TOOL_CALL_START'), frame(3, 'TOOL_CALL_RESULT'), frame(4, 'RUN_ERROR')]),
    ];
    const fetchImpl = vi.fn(async (_url: RequestInfo | URL, _init?: RequestInit) => responses.shift() ?? streamed([]));
    const { events, onEvent } = collect();

    const outcome = await streamRunEvents({ url: '/events', token: 'T', onEvent, fetchImpl, sleep: noSleep });

    expect(outcome).toEqual({ lastEventId: 4, finished: true });
    expect(events.map((event) => event.seq)).toEqual([1, 2, 3, 4]);
    expect((fetchImpl.mock.calls[1]?.[1]?.headers as Record<string, string>)['last-event-id']).toBe('2');
  });

  it('a drop in the middle of a streamed message (even mid-frame): after the reconnect the text reads whole, each delta once', async () => {
    const ids = { runId: 'run-1', threadId: 'thread-1' };
    const events: AgentRunEvent[] = [
      { ...ids, type: 'RUN_STARTED' },
      { ...ids, type: 'TEXT_MESSAGE_START', messageId: 'm1', role: 'assistant', name: 'rover' },
      ...['I found ', '1 depart', 'ment: ', 'Languages.'].map((delta): AgentRunEvent => ({ ...ids, type: 'TEXT_MESSAGE_CONTENT', messageId: 'm1', delta })),
      { ...ids, type: 'TEXT_MESSAGE_END', messageId: 'm1' },
      { ...ids, type: 'RUN_FINISHED', outcome: { type: 'success' } },
    ];
    const frames = events.map((event, index) => frame(index + 1, event.type, event));
    const responses = [
      // Seq 1-4 arrive, then the start of seq 5, and the connection drops.
      streamed([...frames.slice(0, 4), frames.slice(4, 5).join('').slice(0, 20)], { failAfter: true }),
      // The server replays after Last-Event-ID 4 (and a stray seq 4 again, dropped by seq).
      streamed(frames.slice(3)),
    ];
    const fetchImpl = vi.fn(async (_url: RequestInfo | URL, _init?: RequestInit) => responses.shift() ?? streamed([]));
    let state = emptyThread('thread-1');
    const texts: string[] = [];
    await streamRunEvents({
      url: '/events',
      token: 'T',
      fetchImpl,
      sleep: noSleep,
      onEvent: ({ seq, data }) => {
        state = threadReducer(state, { type: 'event', runId: 'run-1', seq, event: agentRunEventSchema.parse(data) });
        const message = state.items.find((item) => item.kind === 'message');
        if (message?.kind === 'message') texts.push(message.text);
      },
    });
    expect((fetchImpl.mock.calls[1]?.[1]?.headers as Record<string, string>)['last-event-id']).toBe('4');
    expect(state.items).toMatchObject([{ kind: 'message', text: 'I found 1 department: Languages.', streaming: false }]);
    // The text only ever grew by one delta: nothing missed, nothing twice.
    expect(texts).toEqual(['', 'I found ', 'I found 1 depart', 'I found 1 department: ', 'I found 1 department: Languages.', 'I found 1 department: Languages.', 'I found 1 department: Languages.']);
  });

  it('resumes from a given Last-Event-ID (after answering a question)', async () => {
    const fetchImpl = vi.fn(async (_url: RequestInfo | URL, _init?: RequestInit) => streamed([frame(8, 'RUN_STARTED'), frame(9, 'RUN_FINISHED')]));
    const { events, onEvent } = collect();

    await streamRunEvents({ url: '/events', token: 'T', lastEventId: 7, onEvent, fetchImpl, sleep: noSleep });

    expect((fetchImpl.mock.calls[0]?.[1]?.headers as Record<string, string>)['last-event-id']).toBe('7');
    expect(events.map((event) => event.seq)).toEqual([8, 9]);
  });

  it('ends without reconnecting when the server closes a stream with nothing new (the run is not running)', async () => {
    const fetchImpl = vi.fn(async () => streamed(['retry: 3000\n\n']));

    const outcome = await streamRunEvents({ url: '/events', token: 'T', lastEventId: 5, onEvent: () => undefined, fetchImpl, sleep: noSleep });

    expect(outcome).toEqual({ lastEventId: 5, finished: false });
    expect(fetchImpl).toHaveBeenCalledTimes(1);
  });

  it('throws the server message on an HTTP error and does not retry it', async () => {
    const fetchImpl = vi.fn(async () => Response.json({ message: 'Run not found.' }, { status: 404 }));

    const failure = streamRunEvents({ url: '/events', token: 'T', onEvent: () => undefined, fetchImpl, sleep: noSleep });

    await expect(failure).rejects.toThrow(HttpError);
    await expect(failure).rejects.toThrow('Run not found.');
    expect(fetchImpl).toHaveBeenCalledTimes(1);
  });

  it('gives up after repeated drops that bring nothing new', async () => {
    const fetchImpl = vi.fn(async () => streamed([], { failAfter: true }));

    await expect(streamRunEvents({ url: '/events', token: 'T', onEvent: () => undefined, fetchImpl, sleep: noSleep, maxReconnects: 2 })).rejects.toThrow(
      /keeps dropping/,
    );
    expect(fetchImpl).toHaveBeenCalledTimes(3);
  });

  it('waits the retry the server asked for, capped, before reconnecting', async () => {
    const responses = [streamed(['retry: 60000\n\n', frame(1, 'RUN_STARTED')], { failAfter: true }), streamed([frame(2, 'RUN_FINISHED')])];
    const sleep = vi.fn(noSleep);

    await streamRunEvents({ url: '/events', token: 'T', onEvent: () => undefined, fetchImpl: async () => responses.shift() ?? streamed([]), sleep, maxRetryMs: 3_000 });

    expect(sleep).toHaveBeenCalledWith(3_000);
  });

  it('stops quietly when aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    const fetchImpl = vi.fn(async () => streamed([frame(1, 'RUN_STARTED')]));

    const outcome = await streamRunEvents({ url: '/events', token: 'T', onEvent: () => undefined, fetchImpl, signal: controller.signal, sleep: noSleep });

    expect(outcome.finished).toBe(false);
    expect(fetchImpl).not.toHaveBeenCalled();
  });
});
