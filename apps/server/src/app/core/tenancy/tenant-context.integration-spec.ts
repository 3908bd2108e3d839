import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { currentManager, unitOfWorkSlot, withSchool } from './tenant-context.js';

let testApp: TestApp;
let schoolA: TestApp['demo']['schools'][0];
let schoolB: TestApp['demo']['schools'][1];

beforeAll(async () => {
  testApp = await createTestApp();
  [schoolA, schoolB] = testApp.demo.schools;
});
afterAll(() => testApp?.close());

const slot = unitOfWorkSlot<{ owner: string }>('probe');

describe('a unit-of-work slot (how the rebuilt ability is bound to a call)', () => {
  it('two concurrent units of work each see only their own value, across awaits', async () => {
    const inFrame = (schoolId: string, actorId: string, owner: string, pause: number) =>
      withSchool(schoolId, actorId, async () => {
        slot.bind({ owner });
        await sleep(pause);
        await currentManager().query('SELECT 1');
        return slot.get()?.owner;
      });
    const seen = await Promise.all([
      inFrame(schoolA.id, schoolA.personas.schoolAdmin.id, 'a', 30),
      inFrame(schoolB.id, schoolB.personas.schoolAdmin.id, 'b', 5),
    ]);
    expect(seen).toEqual(['a', 'b']);
  });

  it('a value ends with its unit of work: nothing is bound outside one, or in the next one', async () => {
    await withSchool(schoolA.id, schoolA.personas.schoolAdmin.id, async () => slot.bind({ owner: 'first' }));
    expect(slot.get()).toBeUndefined();
    expect(await withSchool(schoolA.id, schoolA.personas.schoolAdmin.id, async () => slot.get())).toBeUndefined();
  });

  it('refuses to bind outside a unit of work', () => {
    expect(() => slot.bind({ owner: 'nowhere' })).toThrow(/No tenant frame/);
  });

  it('refuses a second, different value in the same unit of work, and keeps the first (fails closed)', async () => {
    const first = { owner: 'first' };
    const kept = await withSchool(schoolA.id, schoolA.personas.schoolAdmin.id, async () => {
      slot.bind(first);
      slot.bind(first);
      expect(() => slot.bind({ owner: 'second' })).toThrow('This unit of work already has a probe.');
      return slot.get();
    });
    expect(kept).toBe(first);
  });
});
