import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';
import { CONFIRMATION_ANSWERS, isApprovalAnswer } from './confirmation.js';

describe('isApprovalAnswer', () => {
  it('approves only a plain yes, in any case and with trailing punctuation', () => {
    for (const answer of [CONFIRMATION_ANSWERS.approve, 'Yes', ' YES. ', 'approve', 'Go ahead!', 'ok']) expect(isApprovalAnswer(answer)).toBe(true);
  });

  it('declines a no, an empty answer and anything ambiguous, so nothing unclear approves a change', () => {
    for (const answer of [CONFIRMATION_ANSWERS.decline, '', 'yes but for Physics', 'not yes', 'maybe', 'yess']) expect(isApprovalAnswer(answer)).toBe(false);
  });
});

describe('canonicalJson', () => {
  it('sorts keys at every depth and leaves out undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [{ z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[{"y":2,"z":1}]},"b":1}');
  });
});
