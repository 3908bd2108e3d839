import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { currentManager, frameQuery, unitOfWorkSlot, withSchool } from './tenant-context.js';

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

describe('a pinning read (how a tool call opens its unit of work in one statement)', () => {
  // A read that pins exactly as the bare pin does, and says what it saw under the pin it just made.
  const PROBE = {
    sql: `SELECT set_config('app.school_id', $1, true) AS school, set_config('app.platform', $2, true) AS platform,
                 set_config('app.user_id', $3, true) AS actor, set_config('statement_timeout', $4, true) AS limit,
                 set_config('idle_in_transaction_session_timeout', $5, true) AS idle, $6::text AS extra`,
    params: ['probe'],
  };

  it('opens the unit of work in its place, with the pin values first and its own after, and hands its rows to the work', async () => {
    const admin = schoolA.personas.schoolAdmin;
    const [pinned, visible] = await withSchool(
      schoolA.id,
      admin.id,
      async (rows) => [rows, (await currentManager().query(`SELECT current_setting('app.school_id') AS school`)) as unknown[]],
      PROBE,
    );
    expect(pinned).toEqual([{ school: schoolA.id, platform: '', actor: admin.id, limit: '10s', idle: '20s', extra: 'probe' }]);
    expect(visible).toEqual([{ school: schoolA.id }]);
  });

  it('a pinning read that fails runs no work, rolls its transaction back and returns its connection clean to the pool', async () => {
    const admin = schoolA.personas.schoolAdmin;
    const failing = { sql: `SELECT $1::text, $2::text, $3::text, $4::text, $5::text, 1 / $6::int AS boom`, params: [0] };
    let ran = false;
    await expect(
      withSchool(
        schoolA.id,
        admin.id,
        async () => {
          ran = true;
        },
        failing,
      ),
    ).rejects.toThrow(/division by zero/);
    expect(ran).toBe(false);
    // More units of work than the pool has connections: were one left in its aborted transaction, its next pin would fail.
    const after = await Promise.all(
      Array.from({ length: 12 }, () => withSchool(schoolB.id, schoolB.personas.schoolAdmin.id, async (rows) => rows, PROBE)),
    );
    expect(after.flat().map((row) => row['school'])).toEqual(Array.from({ length: 12 }, () => schoolB.id));
  });

  it('inside an open unit of work of the same tenant it answers on that connection; another tenant or actor is refused', async () => {
    const admin = schoolA.personas.schoolAdmin;
    const answered = await withSchool(schoolA.id, admin.id, async () => withSchool(schoolA.id, admin.id, async (rows) => rows, PROBE));
    expect(answered).toMatchObject([{ school: schoolA.id, extra: 'probe' }]);
    await expect(
      withSchool(schoolA.id, admin.id, async () => withSchool(schoolB.id, schoolB.personas.schoolAdmin.id, async (rows) => rows, PROBE)),
    ).rejects.toThrow('A unit of work for another tenant or actor is already open.');
  });
});

describe("the unit of work's transaction (BEGIN, the pin and COMMIT sent on the frame's connection by the frame itself)", () => {
  const insertDepartment = (name: string) => currentManager().query(`INSERT INTO departments (school_id, name) VALUES ($1, $2)`, [schoolA.id, name]);
  const departmentsNamed = async (name: string) =>
    Number(((await testApp.owner.query(`SELECT count(*) FROM departments WHERE name = $1`, [name])) as { count: string }[])[0].count);
  const admin = () => schoolA.personas.schoolAdmin.id;

  it('a manager.transaction() inside it is a savepoint: it cannot commit the unit of work early, whose failure then undoes both', async () => {
    await expect(
      withSchool(schoolA.id, admin(), async () => {
        await insertDepartment('Frame outer A');
        await currentManager().transaction((manager) => manager.query(`INSERT INTO departments (school_id, name) VALUES ($1, $2)`, [schoolA.id, 'Frame inner A']));
        throw new Error('the work failed after its nested transaction');
      }),
    ).rejects.toThrow('the work failed after its nested transaction');
    expect([await departmentsNamed('Frame outer A'), await departmentsNamed('Frame inner A')]).toEqual([0, 0]);
  });

  it("a nested transaction's failure undoes only its own statements; the unit of work commits the rest", async () => {
    await withSchool(schoolA.id, admin(), async () => {
      await insertDepartment('Frame outer B');
      await expect(
        currentManager().transaction(async (manager) => {
          await manager.query(`INSERT INTO departments (school_id, name) VALUES ($1, $2)`, [schoolA.id, 'Frame inner B']);
          throw new Error('the nested work failed');
        }),
      ).rejects.toThrow('the nested work failed');
    });
    expect([await departmentsNamed('Frame outer B'), await departmentsNamed('Frame inner B')]).toEqual([1, 0]);
  });

  it('a failed statement rolls the whole unit of work back and returns its connection clean to the pool', async () => {
    await expect(
      withSchool(schoolA.id, admin(), async () => {
        await insertDepartment('Frame outer C');
        await currentManager().query(`SELECT 1/0`);
      }),
    ).rejects.toThrow(/division by zero/);
    expect(await departmentsNamed('Frame outer C')).toBe(0);
    // Every pooled connection afterwards is outside any transaction, with no tenant left on it.
    const states = await Promise.all(
      Array.from({ length: 4 }, () =>
        withSchool(schoolB.id, schoolB.personas.schoolAdmin.id, async () =>
          (await currentManager().query(`SELECT current_setting('app.school_id') AS school`)) as { school: string }[],
        ),
      ),
    );
    expect(states.flat()).toEqual(Array.from({ length: 4 }, () => ({ school: schoolB.id })));
  });

  it("frameQuery runs on the unit of work's own connection, in its transaction and under its pin", async () => {
    const [seen] = await withSchool(schoolA.id, admin(), async () => {
      await insertDepartment('Frame outer D');
      return frameQuery<{ school: string; startedWithStatement: boolean; department: number }>(
        `SELECT current_setting('app.school_id') AS school, now() = statement_timestamp() AS "startedWithStatement",
                (SELECT count(*)::int FROM departments WHERE name = 'Frame outer D') AS department`,
      );
    });
    // now() is the transaction's start: it is not the statement's own start only inside a transaction begun before it.
    expect(seen).toEqual({ school: schoolA.id, startedWithStatement: false, department: 1 });
  });

  it('work that outlives its unit of work cannot reach the connection the pool has since given to another (another school)', async () => {
    let leaked: Promise<unknown> | undefined;
    await withSchool(schoolA.id, admin(), async () => {
      // Not awaited: it runs on in this unit of work's context after the unit of work has ended.
      leaked = sleep(30).then(() => frameQuery(`SELECT current_setting('app.school_id') AS school`));
    });
    const other = withSchool(schoolB.id, schoolB.personas.schoolAdmin.id, async () => {
      await sleep(60);
      return currentManager().query(`SELECT current_setting('app.school_id') AS school`);
    });
    await expect(leaked).rejects.toThrow('The unit of work has no connection: not connected yet, or already ended.');
    expect(await other).toEqual([{ school: schoolB.id }]);
  });

  it("a leaked manager is refused too, whether the unit of work had made TypeORM's runner or not", async () => {
    const leaked: Promise<unknown>[] = [];
    for (const madeRunner of [true, false]) {
      await withSchool(schoolA.id, admin(), async () => {
        if (madeRunner) await currentManager().query('SELECT 1');
        leaked.push(sleep(30).then(() => currentManager().query(`SELECT current_setting('app.school_id') AS school`)));
      });
    }
    const other = withSchool(schoolB.id, schoolB.personas.schoolAdmin.id, async () => {
      await sleep(60);
      return frameQuery(`SELECT current_setting('app.school_id') AS school`);
    });
    const [withRunner, withoutRunner] = await Promise.allSettled(leaked);
    expect(withRunner).toMatchObject({ status: 'rejected', reason: { message: expect.stringMatching(/already released/) } });
    expect(withoutRunner).toMatchObject({ status: 'rejected', reason: { message: 'The unit of work has no connection: not connected yet, or already ended.' } });
    expect(await other).toEqual([{ school: schoolB.id }]);
  });

  it('a connection that dies while its unit of work holds it fails that unit of work only: the process lives on and the pool discards it', async () => {
    let pid = 0;
    await expect(
      withSchool(schoolA.id, admin(), async () => {
        [{ pid }] = await frameQuery<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        // Killed between statements: pg reports it as an error event on the connection, which nobody awaits.
        await testApp.owner.query('SELECT pg_terminate_backend($1)', [pid]);
        await sleep(100);
        await frameQuery('SELECT 1');
      }),
    ).rejects.toThrow();
    const after = await Promise.all(
      Array.from({ length: 8 }, () => withSchool(schoolB.id, schoolB.personas.schoolAdmin.id, () => frameQuery<{ pid: number; school: string }>(
        `SELECT pg_backend_pid() AS pid, current_setting('app.school_id') AS school`,
      ))),
    );
    expect(after.flat().map((row) => row.school)).toEqual(Array.from({ length: 8 }, () => schoolB.id));
    expect(after.flat().map((row) => row.pid)).not.toContain(pid);
  });
});
