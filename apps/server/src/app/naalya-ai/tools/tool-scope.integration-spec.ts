import { Action, Resource } from '@naalya/access';
import { listDepartmentsTool, listStaffTool } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { abilityInScope } from '../../core/authorization/permission-scope.store.js';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { inMessageFrame, invokeTool } from '../../../testing/tool-handlers.js';
import { ToolExecutor } from './tool-executor.js';
import { inTenantScope, toJwtPayload } from './tool-scope.js';

let testApp: TestApp;

beforeAll(async () => {
  testApp = await createTestApp();
});
afterAll(() => testApp?.close());

/**
 * A service written for trusted jobs: with no ability in scope it assumes a trusted caller and returns
 * everything. This is the shape that once gave a subject teacher a whole-class gradebook.
 */
const serviceWithAdminFallback = async (): Promise<'everything' | 'own rows only'> => {
  const ability = abilityInScope();
  if (!ability) return 'everything';
  return ability.can(Action.READ, Resource.RESULT) ? 'everything' : 'own rows only';
};

describe('the ambient ability store on relationship tools', () => {
  // The control for the two cases below: the same teacher, in a unit of work of their own tenant that nothing
  // populated, meets the fallback failing open. Were an ability left in the store by an earlier call (or put there by
  // the frame itself), the RPC case below would pass whether or not the RPC path populates the store.
  it('an admin fallback fails open when nothing populated the store (the hazard)', async () => {
    const executor = testApp.module.get(ToolExecutor);
    const envelope = await dispatchEnvelope(testApp.demo.schools[0].personas.teacher, listDepartmentsTool, {});
    const own = await inMessageFrame(listDepartmentsTool.event, () =>
      executor.execute(envelope, listDepartmentsTool.schema, { auth: 'relationship' }, serviceWithAdminFallback),
    );
    expect(own).toMatchObject({ data: 'own rows only' });

    expect(await inTenantScope(toJwtPayload(envelope.identity), serviceWithAdminFallback)).toBe('everything');
  });

  it('the RPC path populates the store, so the fallback does not fail open for a teacher', async () => {
    const executor = testApp.module.get(ToolExecutor);
    const teacher = testApp.demo.schools[0].personas.teacher;
    const envelope = await dispatchEnvelope(teacher, listDepartmentsTool, {});
    const result = await inMessageFrame(listDepartmentsTool.event, () =>
      executor.execute(envelope, listDepartmentsTool.schema, { auth: 'relationship' }, serviceWithAdminFallback),
    );
    expect(result).toMatchObject({ data: 'own rows only' });
  });

  it('and still gives a director of studies what their permissions allow', async () => {
    const executor = testApp.module.get(ToolExecutor);
    const envelope = await dispatchEnvelope(testApp.demo.schools[0].personas.directorOfStudies, listDepartmentsTool, {});
    const result = await inMessageFrame(listDepartmentsTool.event, () =>
      executor.execute(envelope, listDepartmentsTool.schema, { auth: 'relationship' }, serviceWithAdminFallback),
    );
    expect(result).toMatchObject({ data: 'everything' });
  });
});

describe('describeScopeContext tells the truth about the caller\'s reach', () => {
  const scopeOf = async (persona: Parameters<typeof dispatchEnvelope>[0], options = {}) =>
    invokeTool(testApp.module, listStaffTool, await dispatchEnvelope(persona, listStaffTool, {}, options));

  it('school-wide for a school administrator', async () => {
    expect(await scopeOf(testApp.demo.schools[0].personas.schoolAdmin)).toMatchObject({ scopeContext: 'Your access covers the whole school.' });
  });

  it('campus-limited for a campus administrator, naming the campus', async () => {
    expect(await scopeOf(testApp.demo.schools[0].personas.campusAdmin)).toMatchObject({
      scopeContext: 'Your access covers the Kisasi campus only.',
    });
  });

  it('every school for a platform administrator without a target school', async () => {
    expect(await scopeOf(testApp.demo.platformAdmin)).toMatchObject({ scopeContext: 'Your access covers every school on the platform.' });
  });

  it('the pinned campus in campus mode, and never another school', async () => {
    const [school, other] = testApp.demo.schools;
    const result = await scopeOf(school.personas.schoolAdmin, { campusId: school.campuses[1].id });
    expect(result).toMatchObject({ scopeContext: 'This covers the Ntinda campus only, the campus this chat is pinned to.' });
    expect(JSON.stringify(result)).not.toContain(other.name);
  });
});
