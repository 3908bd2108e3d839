import { randomUUID } from 'node:crypto';
import { createDepartmentTool, listDepartmentsTool } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerConfig } from '../../core/config/server-config.js';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { SCHOOL_QUOTA_ERROR, ToolCallQuota, USER_QUOTA_ERROR } from './tool-call-quota.js';
import { DISPATCH_REFUSED_ERROR } from './tool-executor.js';

describe('ToolCallQuota (per school and per user, per minute)', () => {
  const quota = (school: number, user: number) =>
    new ToolCallQuota({ TOOL_CALLS_PER_MINUTE_PER_SCHOOL: school, TOOL_CALLS_PER_MINUTE_PER_USER: user } as ServerConfig);

  it('refuses the call over a user limit and counts nothing for it; the next minute starts again', () => {
    const limits = quota(100, 2);
    expect([limits.take('s', 'u', 0), limits.take('s', 'u', 1), limits.take('s', 'u', 2)]).toEqual([null, null, 'USER_QUOTA_EXCEEDED']);
    expect(limits.take('s', 'v', 3)).toBeNull();
    expect(limits.take('s', 'u', 60_001)).toBeNull();
  });

  it('refuses every user of a school over the school limit, and only that school', () => {
    const limits = quota(2, 100);
    expect([limits.take('a', 'u1', 0), limits.take('a', 'u2', 0), limits.take('a', 'u3', 0)]).toEqual([null, null, 'SCHOOL_QUOTA_EXCEEDED']);
    expect(limits.take('b', 'u4', 0)).toBeNull();
  });
});

describe('quotas at the server: one school hitting its limit does not block another', () => {
  let testApp: TestApp;
  beforeAll(async () => {
    testApp = await createTestApp({ TOOL_CALLS_PER_MINUTE_PER_SCHOOL: 3, TOOL_CALLS_PER_MINUTE_PER_USER: 2 });
  });
  afterAll(() => testApp?.close());

  it('a user over their limit is refused with a sentence the model can relay, and nothing runs', async () => {
    const [schoolA] = testApp.demo.schools;
    const admin = schoolA.personas.schoolAdmin;
    const list = async () => invokeTool(testApp.module, listDepartmentsTool, await dispatchEnvelope(admin, listDepartmentsTool, {}));
    expect(await list()).toHaveProperty('data');
    expect(await list()).toHaveProperty('data');
    const name = `Over quota ${randomUUID().slice(0, 6)}`;
    expect(await invokeTool(testApp.module, createDepartmentTool, await dispatchEnvelope(admin, createDepartmentTool, { name }))).toEqual({
      error: USER_QUOTA_ERROR,
      code: 'USER_QUOTA_EXCEEDED',
    });
    expect(await testApp.owner.query(`SELECT id FROM departments WHERE name = $1`, [name])).toEqual([]);
  });

  it('the school limit then refuses a colleague, while the other school still runs', async () => {
    const [schoolA, schoolB] = testApp.demo.schools;
    const call = async (persona: typeof schoolA.personas.teacher) =>
      invokeTool(testApp.module, listDepartmentsTool, await dispatchEnvelope(persona, listDepartmentsTool, {}));
    // School A has used 2 of its 3: one more from a colleague, then the school is full.
    expect(await call(schoolA.personas.teacher)).toHaveProperty('data');
    expect(await call(schoolA.personas.departmentHead)).toEqual({ error: SCHOOL_QUOTA_ERROR, code: 'SCHOOL_QUOTA_EXCEEDED' });
    expect(await call(schoolB.personas.teacher)).toHaveProperty('data');
    expect(await call(schoolB.personas.schoolAdmin)).toHaveProperty('data');
  });

  it('forged calls do not spend a school allowance: they are refused before counting', async () => {
    const [, schoolB] = testApp.demo.schools;
    const forged = await dispatchEnvelope(schoolB.personas.departmentHead, listDepartmentsTool, {}, { signingKey: 'forger-key-forger-key-forger-key-0000' });
    for (let attempt = 0; attempt < 5; attempt++) {
      expect(await invokeTool(testApp.module, listDepartmentsTool, forged)).toEqual({ error: DISPATCH_REFUSED_ERROR, code: 'DISPATCH_REFUSED' });
    }
    // School B has used 2 of its 3; the forgeries took none of it.
    expect(await invokeTool(testApp.module, listDepartmentsTool, await dispatchEnvelope(schoolB.personas.departmentHead, listDepartmentsTool, {}))).toHaveProperty(
      'data',
    );
  });
});
