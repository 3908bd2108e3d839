import { describe, expect, it } from 'vitest';
import { canonicalJson } from './canonical-json.js';
import { approveLessonPlanTool } from './tools/lesson-plans.tools.js';
import {
  CONFIRMATION_ANSWERS,
  changedFields,
  confirmationEditSchema,
  editableValues,
  isApprovalAnswer,
  isConfirmationEdit,
  runAnswerSchema,
  uneditableField,
  withEdits,
} from './confirmation.js';

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

describe('approve with edits', () => {
  const editable = approveLessonPlanTool.confirm?.editable;
  const args = { lessonPlanId: '7f4b2c1e-0d1a-4c3b-9e8f-1a2b3c4d5e6f', comment: 'Good work' };

  it('offers only the arguments the definition lists as editable, with their current values', () => {
    expect(editableValues(editable, args)).toEqual({ comment: 'Good work' });
    expect(editableValues(editable, { lessonPlanId: args.lessonPlanId })).toEqual({});
    expect(editableValues(undefined, args)).toBeUndefined();
  });

  it('names the first edited argument the tool does not let a person change', () => {
    expect(uneditableField(editable, { comment: 'x' })).toBeUndefined();
    expect(uneditableField(editable, { comment: 'x', lessonPlanId: 'other' })).toBe('lessonPlanId');
    expect(uneditableField(undefined, { comment: 'x' })).toBe('comment');
  });

  it('merges edits over the arguments, a null unsetting one, and lists exactly what changed', () => {
    const edited = withEdits(args, { comment: 'Add homework' });
    expect(edited).toEqual({ ...args, comment: 'Add homework' });
    expect(changedFields(args, edited)).toEqual([{ field: 'comment', from: 'Good work', to: 'Add homework' }]);
    expect(withEdits(args, { comment: null })).toEqual({ lessonPlanId: args.lessonPlanId });
    expect(changedFields(args, args)).toEqual([]);
    // An argument that was not set is null (JSON would drop undefined), so the change still parses after the hop.
    const added = changedFields({}, { comment: 'x' });
    expect(added).toEqual([{ field: 'comment', from: null, to: 'x' }]);
    expect(confirmationEditSchema.safeParse(JSON.parse(JSON.stringify(added[0]))).success).toBe(true);
  });

  it('tells an edit answer from a text answer, and takes nothing else as either', () => {
    expect(isConfirmationEdit({ editedArgs: args })).toBe(true);
    expect(isConfirmationEdit('yes')).toBe(false);
    expect(runAnswerSchema.safeParse({ editedArgs: args, extra: 1 }).success).toBe(false);
    expect(runAnswerSchema.safeParse(42).success).toBe(false);
  });
});
