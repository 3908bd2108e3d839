import { describe, expect, it } from 'vitest';
import { AckAfterReplyTransport, foreignPublisher, type AckAfterReplyTransportOptions } from './ack-after-reply.transport.js';

const valid: AckAfterReplyTransportOptions = {
  url: 'amqp://guest:guest@127.0.0.1:5672',
  queue: 'agent-tools',
  prefetch: 8,
  deadLetterExchange: 'agent-tools.dlx',
  handlerTimeoutMs: 30_000,
  drainTimeoutMs: 10_000,
};

describe('AckAfterReplyTransport options', () => {
  it.each([
    ['prefetch 0 (unlimited to RabbitMQ)', { prefetch: 0 }],
    ['a fractional prefetch', { prefetch: 1.5 }],
    ['a NaN handlerTimeoutMs', { handlerTimeoutMs: Number.NaN }],
    ['an infinite handlerTimeoutMs', { handlerTimeoutMs: Number.POSITIVE_INFINITY }],
    ['a zero drainTimeoutMs', { drainTimeoutMs: 0 }],
    ['a negative maxMessageBytes', { maxMessageBytes: -1 }],
  ])('refuses %s', (_, override) => {
    expect(() => new AckAfterReplyTransport({ ...valid, ...override })).toThrow(/must be a positive/);
  });

  it('accepts valid options without connecting', () => {
    const transport = new AckAfterReplyTransport(valid);

    expect(() => transport.unwrap()).toThrow(/not listening/);
  });
});

describe('foreignPublisher', () => {
  it('accepts only the required broker user, and says what any other message claimed', () => {
    expect(foreignPublisher('naalya_worker', 'naalya_worker')).toBeUndefined();
    expect(foreignPublisher(undefined, 'naalya_worker')).toBe('no user_id');
    expect(foreignPublisher('naalya_server', 'naalya_worker')).toBe('user_id "naalya_server"');
    // A long claim is logged shortened to 200 characters of its JSON text.
    expect(foreignPublisher('x'.repeat(500), 'naalya_worker')).toBe(`user_id "${'x'.repeat(199)}…`);
  });

  it('accepts exactly the listed publishers when given several (the worker and the MCP door)', () => {
    const allowed = ['naalya_worker', 'naalya_mcp'];
    expect(foreignPublisher('naalya_worker', allowed)).toBeUndefined();
    expect(foreignPublisher('naalya_mcp', allowed)).toBeUndefined();
    expect(foreignPublisher('naalya_server', allowed)).toBe('user_id "naalya_server"');
    expect(foreignPublisher(undefined, allowed)).toBe('no user_id');
    expect(foreignPublisher('naalya_worker', [])).toBe('user_id "naalya_worker"');
  });
});
