import { describe, expect, it } from 'vitest';
import { DIRECT_REPLY_TO, rmqClientOptions } from './rmq-client-options.js';

describe('rmqClientOptions', () => {
  it('never asserts the queue, uses direct reply-to and TCP_NODELAY, and leaves noAck unset (nestjs/nest#11966)', () => {
    const options = rmqClientOptions({ url: 'amqp://guest:guest@127.0.0.1:5672', queue: 'agent-tools' });

    expect(options).toEqual({
      urls: ['amqp://guest:guest@127.0.0.1:5672'],
      queue: 'agent-tools',
      noAssert: true,
      replyQueue: DIRECT_REPLY_TO,
      persistent: false,
      socketOptions: { connectionOptions: { noDelay: true } },
    });
    expect('noAck' in options).toBe(false);
  });

  it('names the connection when asked', () => {
    const options = rmqClientOptions({ url: 'amqp://x', queue: 'q', connectionName: 'worker', heartbeatIntervalInSeconds: 5 });

    expect(options.socketOptions).toEqual({
      connectionOptions: { noDelay: true, clientProperties: { connection_name: 'worker' } },
      heartbeatIntervalInSeconds: 5,
    });
  });
});
