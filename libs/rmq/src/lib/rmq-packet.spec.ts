import { describe, expect, it } from 'vitest';
import { parseRmqPacket } from './rmq-packet.js';

const parse = (body: string, limit = 1024) => parseRmqPacket(Buffer.from(body), limit);

describe('parseRmqPacket', () => {
  it('accepts a Nest call packet and an event packet (no id)', () => {
    expect(parse('{"pattern":"echo.thing","data":{"n":1},"id":"c1"}')).toEqual({ ok: true, packet: { pattern: 'echo.thing', data: { n: 1 }, id: 'c1' } });
    expect(parse('{"pattern":{"cmd":"x"},"data":null}')).toEqual({ ok: true, packet: { pattern: { cmd: 'x' }, data: null, id: undefined } });
  });

  it('refuses a body over the limit before parsing it', () => {
    expect(parse(JSON.stringify({ pattern: 'p', data: 'x'.repeat(100) }), 50)).toMatchObject({ ok: false, reason: expect.stringContaining('exceeds the limit of 50 bytes') });
  });

  it('refuses a body that is not valid UTF-8 instead of decoding it with replacement characters', () => {
    const body = Buffer.concat([Buffer.from('{"pattern":"p","data":"a'), Buffer.from([0xff]), Buffer.from('"}')]);
    expect(parseRmqPacket(body, 1024)).toEqual({ ok: false, reason: 'Message body is not valid UTF-8.' });
  });

  it.each([
    ['not JSON', 'not json {'],
    ['a JSON string', '"echo.thing"'],
    ['an array', '[1,2]'],
    ['null', 'null'],
    ['no pattern', '{"data":1,"id":"c"}'],
    ['a boolean pattern', '{"pattern":true,"data":1}'],
    ['an array pattern', '{"pattern":["a"],"data":1}'],
    ['a numeric id', '{"pattern":"p","data":1,"id":7}'],
  ])('refuses %s', (_, body) => {
    expect(parse(body)).toMatchObject({ ok: false });
  });
});
