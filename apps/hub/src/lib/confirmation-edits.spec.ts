import { describe, expect, it } from 'vitest';
import { changedArguments, draftOf, editSummaries, editableFields, fieldError, refusedField, type EditableField } from './confirmation-edits';

const LESSON_PLAN = 'approve.lesson-plan';
const ASSIGNMENT = 'assign.teaching-assignment';
const TEACHER = '3f2b1c0d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const OTHER_TEACHER = '8a7b6c5d-4e3f-4a1b-9c8d-7e6f5a4b3c2d';

describe('editableFields: what a confirmation lets a person change, from the tool definition', () => {
  it('approving a lesson plan: the comment only, as optional text of up to 500 characters in a multi-line box', () => {
    expect(editableFields(LESSON_PLAN)).toEqual([{ name: 'comment', label: 'Comment', optional: true, kind: 'text', multiline: true, maxLength: 500 }]);
  });

  it('assigning a subject teacher: the teacher, an id picked by name, labelled from the schema ("The id of the teacher"), never as an id', () => {
    expect(editableFields(ASSIGNMENT)).toEqual([{ name: 'staffId', label: 'Teacher', optional: false, kind: 'id', idKind: 'staff' }]);
  });

  it('a tool with nothing editable, an unknown event, or none offers no field', () => {
    expect(editableFields('delete.department')).toEqual([]);
    expect(editableFields('no.such-event')).toEqual([]);
    expect(editableFields(undefined)).toEqual([]);
  });
});

describe('the edit form: values, checks, what is sent', () => {
  const [comment] = editableFields(LESSON_PLAN) as [EditableField];
  const [teacher] = editableFields(ASSIGNMENT) as [EditableField];

  it('starts from the values asked about (nothing as empty text)', () => {
    expect(draftOf('Good work')).toBe('Good work');
    expect(draftOf(undefined)).toBe('');
    expect(draftOf(null)).toBe('');
  });

  it('refuses by the field, in words, what the tool schema refuses: too long, a required id left empty, an id that is not one', () => {
    expect(fieldError(LESSON_PLAN, comment, 'Add homework')).toBeUndefined();
    expect(fieldError(LESSON_PLAN, comment, '')).toBeUndefined();
    expect(fieldError(LESSON_PLAN, comment, 'x'.repeat(501))).toBe('Comment takes at most 500 characters (this has 501).');
    // Trimmed as the schema trims it: spaces around the text do not count.
    expect(fieldError(LESSON_PLAN, comment, ` ${'x'.repeat(500)} `)).toBeUndefined();
    expect(fieldError(ASSIGNMENT, teacher, TEACHER)).toBeUndefined();
    expect(fieldError(ASSIGNMENT, teacher, '')).toBe('Choose a teacher.');
    expect(fieldError(ASSIGNMENT, teacher, 'Grace')).toBe('This teacher is not accepted.');
  });

  it('sends only what changed, trimmed; an optional field emptied is unset (null)', () => {
    expect(changedArguments([comment], { comment: 'Good' }, { comment: ' Good ' })).toEqual({});
    expect(changedArguments([comment], {}, { comment: ' Add homework ' })).toEqual({ comment: 'Add homework' });
    expect(changedArguments([comment], { comment: 'Good' }, { comment: '' })).toEqual({ comment: null });
    expect(changedArguments([teacher], { staffId: TEACHER }, { staffId: OTHER_TEACHER })).toEqual({ staffId: OTHER_TEACHER });
  });

  it("finds the field a server's refusal names, whatever the sentence around it", () => {
    expect(refusedField('Invalid arguments: comment: Too big: expected string to have <=500 characters.', ['comment'])).toBe('comment');
    expect(refusedField('Invalid request: edits.staffId: only comment can be edited in this confirmation.', ['staffId'])).toBe('staffId');
    expect(refusedField('Invalid arguments: lessonPlanId: Invalid UUID.', ['comment'])).toBeUndefined();
  });
});

describe('editSummaries: what the person changed, for people', () => {
  it('labels each change and quotes text; nothing set reads "nothing"', () => {
    expect(editSummaries(LESSON_PLAN, [{ field: 'comment', from: undefined, to: 'Add homework' }], () => undefined)).toEqual([
      { field: 'comment', label: 'Comment', from: 'nothing', to: '“Add homework”' },
    ]);
  });

  it('names an id by its picker, and never shows the id, even when the name is not known', () => {
    const names: Record<string, string> = { [TEACHER]: 'Benjamin Ssali' };
    const [change] = editSummaries(ASSIGNMENT, [{ field: 'staffId', from: TEACHER, to: OTHER_TEACHER }], (_field, id) => names[id]);
    expect(change).toEqual({ field: 'staffId', label: 'Teacher', from: 'Benjamin Ssali', to: 'another teacher' });
    // An id argument the Hub has no field for is not shown either.
    const [unknown] = editSummaries(LESSON_PLAN, [{ field: 'lessonPlanId', from: TEACHER, to: OTHER_TEACHER }], () => undefined);
    expect(JSON.stringify(unknown)).not.toContain(TEACHER.slice(0, 8));
  });
});
