import { describe, expect, it } from 'vitest';
import {
  CONTEXT_MISSING_ERROR,
  resolveCallScope,
  resolveIdentity,
  resolvePermissions,
  resolveRuntimeContext,
} from './tool-context.js';
import {
  HOME_CAMPUS_ID,
  PINNED_CAMPUS_ID,
  SCHOOL_ID,
  campusContext,
  platformAdminContext,
  schoolContext,
} from './tool-context.fixture.js';

const withoutKey = <T extends object>(value: T, key: keyof T) => {
  const copy: Partial<T> = { ...value };
  delete copy[key];
  return copy;
};

describe('resolveIdentity', () => {
  it('takes identity only from the dispatch context userDetails', () => {
    expect(resolveIdentity({ context: schoolContext() })).toEqual({
      sub: 'user-ada',
      type: 'staff',
      schoolId: SCHOOL_ID,
      campusId: HOME_CAMPUS_ID,
    });
  });

  it('keeps a platform admin schoolId null: the worker never invents a school for the caller', () => {
    expect(resolveIdentity({ context: platformAdminContext() })).toEqual({
      sub: 'user-root',
      type: 'platform_admin',
      schoolId: null,
      campusId: null,
    });
  });
});

describe('resolveCallScope', () => {
  it('school mode has no campusId, even when the user has a home campus', () => {
    const scope = resolveCallScope({ context: schoolContext() });
    expect(scope).toEqual({ mode: 'school' });
    expect(scope).not.toHaveProperty('campusId');
    expect(scope).not.toHaveProperty('targetSchoolId');
  });

  it('campus mode pins campusId to the run mode campus, not the user home campus', () => {
    expect(resolveCallScope({ context: campusContext() })).toEqual({ mode: 'campus', campusId: PINNED_CAMPUS_ID });
  });

  it('school mode carries the targetSchoolId minted at dispatch', () => {
    expect(resolveCallScope({ context: platformAdminContext() })).toEqual({ mode: 'school', targetSchoolId: SCHOOL_ID });
  });
});

describe('fail closed: a missing or malformed context resolves to null', () => {
  const valid = schoolContext();
  const cases: Array<[string, unknown]> = [
    ['no context', undefined],
    ['null context', null],
    ['a string context', 'user-ada'],
    ['an empty object', {}],
    ['userDetails missing', withoutKey(valid, 'userDetails')],
    ['run missing (no thread id for the idempotency key)', withoutKey(valid, 'run')],
    ['capabilities missing', withoutKey(valid, 'capabilities')],
    ['an empty user id', { ...valid, userDetails: { ...valid.userDetails, id: '' } }],
    ['an unknown user type', { ...valid, userDetails: { ...valid.userDetails, userType: 'superuser' } }],
    ['schoolId of the wrong type', { ...valid, userDetails: { ...valid.userDetails, schoolId: 42 } }],
    ['campus mode without a campus', { ...valid, runMode: { mode: 'campus' } }],
    ['an unknown run mode', { ...valid, runMode: { mode: 'district' } }],
    ['an extra top-level key', { ...valid, schoolId: SCHOOL_ID }],
    ['an extra key in userDetails (a smuggled role)', { ...valid, userDetails: { ...valid.userDetails, role: 'admin' } }],
    ['an extra key in runMode', { ...valid, runMode: { mode: 'school', campusId: PINNED_CAMPUS_ID } }],
    ['an extra key in run', { ...valid, run: { ...valid.run, parentRunId: 'run-0' } }],
  ];

  it.each(cases)('%s', (_, context) => {
    const runtime = { context };
    expect(resolveRuntimeContext(runtime)).toBeNull();
    expect(resolveIdentity(runtime)).toBeNull();
    expect(resolveCallScope(runtime)).toBeNull();
    expect(resolvePermissions(runtime)).toEqual([]);
  });

  it('a runtime object without a context key', () => {
    expect(resolveIdentity({})).toBeNull();
    expect(resolveCallScope({})).toBeNull();
  });
});

describe('a context is parsed once per context object', () => {
  it('cannot be edited into another identity after its first call: the first verdict stands, and what was read is frozen', () => {
    const context = schoolContext();
    const resolved = resolveRuntimeContext({ context });
    context.userDetails.id = 'user-mallory';
    expect(resolveIdentity({ context })?.sub).toBe('user-ada');
    expect(() => {
      (resolved?.userDetails as { schoolId: string | null }).schoolId = 'another-school';
    }).toThrow(TypeError);
    expect(resolveIdentity({ context })?.schoolId).toBe(SCHOOL_ID);
  });

  it('reads a different context object anew, even when an earlier one was malformed', () => {
    const malformed = { ...schoolContext(), userDetails: { id: 'user-ada' } };
    expect(resolveRuntimeContext({ context: malformed })).toBeNull();
    expect(resolveRuntimeContext({ context: malformed })).toBeNull();
    expect(resolveIdentity({ context: campusContext() })?.sub).toBe('user-ada');
    expect(resolveCallScope({ context: campusContext() })).toEqual({ mode: 'campus', campusId: PINNED_CAMPUS_ID });
  });
});

describe('resolvePermissions', () => {
  it('returns the display-only rule snapshot of the dispatch', () => {
    expect(resolvePermissions({ context: schoolContext() })).toEqual([{ action: 'list', subject: 'Staff' }]);
  });
});

describe('CONTEXT_MISSING_ERROR', () => {
  it('tells the model not to retry, so a missing context cannot become a retry loop', () => {
    expect(CONTEXT_MISSING_ERROR).toContain('cannot run securely');
    expect(CONTEXT_MISSING_ERROR).toContain('Do not retry.');
  });
});
