import { MESSAGE_SIGNATURE_HEADER, generateMessageSigningKeyPair, parseMessageSigningKey, parseMessageVerifyingKeys, signMessage, type RmqMessageFrame } from '@naalya/rmq';
import { Logger } from '@nestjs/common';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RunStepAuthenticity, checkRunStepAuthenticity } from './run-step-authenticity.js';

const current = generateMessageSigningKeyPair('k2');
const previous = generateMessageSigningKeyPair('k1');
const options = { serverBrokerUser: 'naalya_server', publicKeys: parseMessageVerifyingKeys(`${current.publicKey},${previous.publicKey}`) };
const body = Buffer.from('{"pattern":"agent.run","data":{"kind":"start","message":"a user\'s private words"}}');

const frame = (overrides: { userId?: string; header?: unknown; content?: Buffer; messageId?: string } = {}): RmqMessageFrame => {
  const content = overrides.content ?? body;
  const header = 'header' in overrides ? overrides.header : signMessage(body, parseMessageSigningKey(current.privateKey));
  return {
    pattern: 'agent.run',
    properties: {
      userId: 'userId' in overrides ? overrides.userId : 'naalya_server',
      messageId: overrides.messageId,
      headers: header === undefined ? {} : { [MESSAGE_SIGNATURE_HEADER]: header },
    } as RmqMessageFrame['properties'],
    fields: {} as RmqMessageFrame['fields'],
    content,
    signal: new AbortController().signal,
    aborted: false,
    logIds: {},
  };
};

afterEach(() => vi.restoreAllMocks());

describe('checkRunStepAuthenticity', () => {
  it("admits a step from the server's broker user signed by a held key, old or new", () => {
    expect(checkRunStepAuthenticity(frame(), options)).toEqual({ authentic: true, kid: 'k2' });
    const byOld = signMessage(body, parseMessageSigningKey(previous.privateKey));
    expect(checkRunStepAuthenticity(frame({ header: byOld }), options)).toEqual({ authentic: true, kid: 'k1' });
  });

  it.each([
    ['another broker user, though the signature is genuine', { userId: 'guest' }, /published with user_id "guest", and only naalya_server publishes run steps/],
    ['no user_id', { userId: undefined }, /published with no user_id/],
    ['no signature', { header: undefined }, /carries no signature/],
    ['a malformed signature', { header: 'k2:abc' }, /signature header is malformed/],
    ['a copied signature over another body', { content: Buffer.from(body.toString().replace('private', 'forged!')) }, /does not match its body \(key id "k2"\)/],
    ['a key the worker does not hold', { header: signMessage(body, parseMessageSigningKey(generateMessageSigningKeyPair('k9').privateKey)) }, /names a key this worker does not hold \(key id "k9"\)/],
    ['another key under a held key id', { header: signMessage(body, parseMessageSigningKey(generateMessageSigningKeyPair('k2').privateKey)) }, /does not match its body/],
  ])('refuses a step with %s', (_what, overrides, reason) => {
    const verdict = checkRunStepAuthenticity(frame(overrides), options);
    expect(verdict.authentic).toBe(false);
    expect(verdict.authentic ? '' : verdict.reason).toMatch(reason);
  });

  it('refuses when there is no message frame at all (fails closed)', () => {
    expect(checkRunStepAuthenticity(undefined, options)).toMatchObject({ authentic: false });
  });
});

describe('RunStepAuthenticity', () => {
  it('logs a refused step as a security event with its message id and never its body', () => {
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    const check = new RunStepAuthenticity(options);

    expect(check.admits(frame())).toBe(true);
    expect(warn).not.toHaveBeenCalled();
    expect(check.admits(frame({ userId: 'guest', messageId: 'm-1' }))).toBe(false);

    expect(warn).toHaveBeenCalledTimes(1);
    const line = String(warn.mock.calls[0]?.[0]);
    expect(line).toMatch(/^security event: run step refused and dropped unrun: it was published with user_id "guest".*\(message id "m-1"\)$/);
    expect(line).not.toContain('private words');
  });
});
