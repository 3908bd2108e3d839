import { eligibleAgentRoles, type AgentRuntimeContext } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tokenFor } from '../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../testing/test-app.js';
import type { PersonaKey } from '../seed/demo-seed.js';

let testApp: TestApp;

beforeAll(async () => {
  testApp = await createTestApp();
});
afterAll(() => testApp?.close());

const rosterOf = async (key: PersonaKey) => {
  const persona = testApp.demo.schools[0].personas[key];
  const response = await fetch(`${await testApp.app.getUrl()}/agent/context`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokenFor(testApp, persona)}`, 'content-type': 'application/json' },
    body: '{}',
  });
  const context = (await response.json()) as AgentRuntimeContext;
  return eligibleAgentRoles(context.capabilities);
};

describe('capabilities come from data, and the roster follows them', () => {
  it.each<[PersonaKey, string[]]>([
    ['classTeacher', ['class_teacher']],
    ['subjectTeacher', ['subject_teacher']],
    ['bothHats', ['class_teacher', 'subject_teacher']],
    ['directorOfStudies', ['subject_teacher', 'dos']],
    ['registrar', []],
    ['schoolAdmin', []],
  ])('%s gets the specialists %j', async (key, roles) => {
    expect(await rosterOf(key)).toEqual(roles);
  });

  it('a new class makes its teacher a class teacher on the very next context', async () => {
    const school = testApp.demo.schools[0];
    expect(await rosterOf('registrar')).toEqual([]);
    await testApp.owner.query(`UPDATE classes SET class_teacher_id = $1 WHERE id = $2`, [
      school.personas.registrar.id,
      school.teaching.classes[5].id,
    ]);
    expect(await rosterOf('registrar')).toEqual(['class_teacher']);
  });
});
