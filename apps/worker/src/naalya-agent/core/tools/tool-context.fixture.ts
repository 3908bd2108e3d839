import type { AgentRuntimeContext, AgentToolPayload } from '@naalya/agent-tools';

export const SCHOOL_ID = '0b3c5f0e-1a2b-4c3d-8e4f-5a6b7c8d9e01';
export const OTHER_SCHOOL_ID = '9f8e7d6c-5b4a-4938-8271-605f4e3d2c1b';
export const HOME_CAMPUS_ID = '1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5';
export const PINNED_CAMPUS_ID = '2d3e4f5a-6b7c-4d8e-9fa0-b1c2d3e4f5a6';
export const OTHER_CAMPUS_ID = '3e4f5a6b-7c8d-4e9f-a0b1-c2d3e4f5a6b7';

// What the server mints at dispatch for a staff member in school mode.
export const schoolContext = (): AgentRuntimeContext => ({
  userDetails: {
    id: 'user-ada',
    userType: 'staff',
    schoolId: SCHOOL_ID,
    campusId: HOME_CAMPUS_ID,
    fullName: 'Ada Nakato',
    email: 'ada@school.example',
  },
  runMode: { mode: 'school' },
  run: { runId: 'run-1', threadId: 'thread-1' },
  userPermissions: [{ action: 'list', subject: 'Staff' }],
  capabilities: { isClassTeacher: true, isSubjectTeacher: false, isDirectorOfStudies: false },
});

export const campusContext = (): AgentRuntimeContext => ({
  ...schoolContext(),
  runMode: { mode: 'campus', campus: { id: PINNED_CAMPUS_ID, name: 'Kisasi' } },
});

// A platform admin has no school; a write needs the target school chosen at dispatch.
export const platformAdminContext = (): AgentRuntimeContext => ({
  ...schoolContext(),
  userDetails: {
    id: 'user-root',
    userType: 'platform_admin',
    schoolId: null,
    campusId: null,
    fullName: 'Platform Admin',
    email: 'admin@naalya.example',
  },
  runMode: { mode: 'school', targetSchoolId: SCHOOL_ID },
});

export const listStaffPayload = (): AgentToolPayload['list.staff'] => ({
  identity: { sub: 'user-ada', type: 'staff', schoolId: SCHOOL_ID, campusId: HOME_CAMPUS_ID },
  scope: { mode: 'school' },
  args: {},
  meta: { callId: 'a'.repeat(64), deadline: Date.now() + 15_000 },
});

export const createDepartmentPayload = (): AgentToolPayload['create.department'] => ({
  identity: { sub: 'user-ada', type: 'staff', schoolId: SCHOOL_ID, campusId: HOME_CAMPUS_ID },
  scope: { mode: 'campus', campusId: PINNED_CAMPUS_ID },
  args: { name: 'Sciences' },
  meta: { callId: 'b'.repeat(64), deadline: Date.now() + 15_000 },
});
