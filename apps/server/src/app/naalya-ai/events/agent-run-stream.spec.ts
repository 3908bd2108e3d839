import { describe, expect, it } from 'vitest';
import { LAST_EVENT_ID_ERROR, formatServerSentEvent, parseLastEventId } from './agent-run-stream.service.js';

describe('server-sent events', () => {
  it('frames one event as id, event and a single data line, in AG-UI shape: no run or thread id on a text piece', () => {
    const payload = { runId: 'run-1', threadId: 'thread-1', type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'two\nlines' } as const;
    expect(formatServerSentEvent({ seq: 7, type: 'TEXT_MESSAGE_CONTENT', payload })).toBe(
      `id: 7\nevent: TEXT_MESSAGE_CONTENT\ndata: ${JSON.stringify({ type: 'TEXT_MESSAGE_CONTENT', messageId: 'm', delta: 'two\nlines' })}\n\n`,
    );
  });

  it('keeps the run and thread ids where AG-UI defines them: RUN_STARTED and RUN_FINISHED', () => {
    const payload = { runId: 'run-1', threadId: 'thread-1', type: 'RUN_FINISHED', outcome: { type: 'success' } } as const;
    expect(formatServerSentEvent({ seq: 9, type: 'RUN_FINISHED', payload })).toBe(`id: 9\nevent: RUN_FINISHED\ndata: ${JSON.stringify(payload)}\n\n`);
  });

  it('reads Last-Event-ID as a seq, and refuses anything else', () => {
    expect(parseLastEventId(undefined)).toBe(0);
    expect(parseLastEventId('')).toBe(0);
    expect(parseLastEventId('42')).toBe(42);
    for (const bad of ['-1', '1.5', 'abc', '9999999999']) expect(() => parseLastEventId(bad)).toThrow(LAST_EVENT_ID_ERROR);
  });
});
