import { describe, expect, it } from 'vitest';
import { DIRECT_REPLY_TO, isDirectReplyTo } from './rmq-names.js';

describe('isDirectReplyTo (a tool call\'s reply goes only to a direct reply-to address)', () => {
  it('accepts an address as the broker issues it to a caller consuming the pseudo-queue', () => {
    expect(isDirectReplyTo(`${DIRECT_REPLY_TO}.g1h2AA5yZXBseUA0MzE1NjQ0MgAAQqgAAAAAZ1Rcbw==`)).toBe(true);
  });

  it('refuses an ordinary queue, the bare pseudo-queue name, an empty token, a lookalike and a non-string', () => {
    for (const replyTo of ['agent-runs', `agent-runs.${DIRECT_REPLY_TO}.x`, DIRECT_REPLY_TO, `${DIRECT_REPLY_TO}.`, 'amq.rabbitmq.reply-toX.abc', '', undefined, null, 42]) {
      expect(isDirectReplyTo(replyTo), String(replyTo)).toBe(false);
    }
  });
});
