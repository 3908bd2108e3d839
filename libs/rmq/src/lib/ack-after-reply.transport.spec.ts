import { describe, expect, it } from 'vitest';
import { AckAfterReplyTransport, type AckAfterReplyTransportOptions } from './ack-after-reply.transport.js';

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
