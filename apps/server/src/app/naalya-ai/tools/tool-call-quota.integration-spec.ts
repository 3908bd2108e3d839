import { randomUUID } from 'node:crypto';
import { createDepartmentTool, listDepartmentsTool } from '@naalya/agent-tools';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAppDataSource } from '../../core/database/data-source.js';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { createTestDatabase, type TestDatabase } from '../../../testing/test-database.js';
import { invokeTool } from '../../../testing/tool-handlers.js';
import { ADMITTED_CALL_IDS_MAX, QUOTA_RESERVATION_BLOCK, SCHOOL_QUOTA_ERROR, ToolCallQuota, USER_QUOTA_ERROR, quotaWindow } from './tool-call-quota.js';
import { DISPATCH_REFUSED_ERROR } from './tool-executor.js';

const MINUTE = 60_000;
/** A fixed instant at the start of a minute, so that tests choose which window each take lands in. */
const T0 = 1_800_000_000_000 - (1_800_000_000_000 % MINUTE);

type Limits = { school: number; user: number };
const limitsConfig = (limits: Limits, store: 'postgres' | 'memory') => ({
  TOOL_CALLS_PER_MINUTE_PER_SCHOOL: limits.school,
  TOOL_CALLS_PER_MINUTE_PER_USER: limits.user,
  TOOL_CALL_QUOTA_STORE: store,
});

/** Waits until the current minute has at least `ms` left, so that a test driving the real clock stays in one window. */
const awayFromMinuteEnd = async (ms: number) => {
  const left = MINUTE - (Date.now() % MINUTE);
  if (left < ms) await new Promise((resolve) => setTimeout(resolve, left + 50));
};

describe('ToolCallQuota in memory (one process only)', () => {
  const memoryQuota = (school: number, user: number) => new ToolCallQuota(limitsConfig({ school, user }, 'memory'), undefined as unknown as DataSource);

  it('refuses the call over a user limit and counts nothing for it; the next minute starts again', async () => {
    const limits = memoryQuota(100, 2);
    expect([await limits.take('s', 'u', T0), await limits.take('s', 'u', T0 + 1), await limits.take('s', 'u', T0 + 2)]).toEqual([null, null, 'USER_QUOTA_EXCEEDED']);
    expect(await limits.take('s', 'v', T0 + 3)).toBeNull();
    expect(await limits.take('s', 'u', T0 + MINUTE)).toBeNull();
  });

  it('refuses every user of a school over the school limit, and only that school', async () => {
    const limits = memoryQuota(2, 100);
    expect([await limits.take('a', 'u1', T0), await limits.take('a', 'u2', T0), await limits.take('a', 'u3', T0)]).toEqual([null, null, 'SCHOOL_QUOTA_EXCEEDED']);
    expect(await limits.take('b', 'u4', T0)).toBeNull();
  });

  it('is per process: two replicas counting in memory allow twice the limit (why postgres is the default)', async () => {
    const replicas = [memoryQuota(3, 100), memoryQuota(3, 100)];
    const outcomes = [];
    for (let i = 0; i < 8; i++) outcomes.push(await replicas[i % 2].take('s', `u${i}`, T0));
    expect(outcomes.filter((outcome) => outcome === null)).toHaveLength(6);
  });
});

describe('ToolCallQuota: a call id counts once', () => {
  const memoryQuota = (school: number, user: number) => new ToolCallQuota(limitsConfig({ school, user }, 'memory'), undefined as unknown as DataSource);

  it('repeats of a call id in one process cost nothing until its deadline and the grace after it have passed', async () => {
    const limits = memoryQuota(100, 2);
    const deadline = T0 + 15_000;
    expect(await limits.admit('call-1', deadline, 's', 'u', T0)).toEqual({ charged: true, refusal: null, window: quotaWindow(T0) });
    for (const at of [T0 + 1, T0 + 10_000, deadline + 1_999]) expect(await limits.admit('call-1', deadline, 's', 'u', at)).toMatchObject({ charged: false, refusal: null });
    expect(await limits.admit('call-2', deadline, 's', 'u', T0 + 2)).toMatchObject({ charged: true, refusal: null });
    // Past the deadline's grace the id is forgotten: a copy that late is counted like a new call (here: over the limit).
    expect(await limits.admit('call-1', deadline, 's', 'u', deadline + 2_001)).toMatchObject({ charged: false, refusal: 'USER_QUOTA_EXCEEDED' });
  });

  it('giveBack returns a counted call to both allowances, only in the minute it was counted and only once it was counted', async () => {
    const limits = memoryQuota(100, 1);
    const first = await limits.admit('call-1', T0 + 15_000, 's', 'u', T0);
    expect(await limits.admit('call-2', T0 + 15_000, 's', 'u', T0 + 1)).toMatchObject({ refusal: 'USER_QUOTA_EXCEEDED' });
    limits.giveBack(first, 's', 'u', T0 + 2);
    const second = await limits.admit('call-2', T0 + 15_000, 's', 'u', T0 + 3);
    expect(second).toMatchObject({ charged: true, refusal: null });
    // A repeat that was not counted gives nothing back; nor does a call of a minute that is over.
    limits.giveBack(await limits.admit('call-2', T0 + 15_000, 's', 'u', T0 + 4), 's', 'u', T0 + 5);
    expect(await limits.admit('call-3', T0 + 15_000, 's', 'u', T0 + 6)).toMatchObject({ refusal: 'USER_QUOTA_EXCEEDED' });
    limits.giveBack(second, 's', 'u', T0 + MINUTE);
    expect(await limits.admit('call-4', T0 + MINUTE + 15_000, 's', 'u', T0 + MINUTE)).toMatchObject({ charged: true, refusal: null });
    expect(await limits.admit('call-5', T0 + MINUTE + 15_000, 's', 'u', T0 + MINUTE + 1)).toMatchObject({ refusal: 'USER_QUOTA_EXCEEDED' });
  });

  it('remembers at most ADMITTED_CALL_IDS_MAX ids: the oldest are forgotten first', async () => {
    const limits = memoryQuota(1_000_000, 1_000_000);
    for (let i = 0; i <= ADMITTED_CALL_IDS_MAX; i++) await limits.admit(`call-${i}`, T0 + 15_000, 's', 'u', T0);
    expect(await limits.admit(`call-${ADMITTED_CALL_IDS_MAX}`, T0 + 15_000, 's', 'u', T0)).toMatchObject({ charged: false });
    expect(await limits.admit('call-0', T0 + 15_000, 's', 'u', T0)).toMatchObject({ charged: true });
  });
});

describe('ToolCallQuota in PostgreSQL, shared by two server replicas', () => {
  let database: TestDatabase;
  const dataSources: DataSource[] = [];
  const replica = (limits: Limits) => new ToolCallQuota(limitsConfig(limits, 'postgres'), dataSources[0]);
  /** Two "replicas": each its own ToolCallQuota over its own connection pool to the one database. */
  const twoReplicas = (limits: Limits) => dataSources.map((dataSource) => new ToolCallQuota(limitsConfig(limits, 'postgres'), dataSource));
  /** A replica whose statements are counted: the round trips a take costs. */
  const countedReplica = (limits: Limits) => {
    const statements: string[] = [];
    const counting = { query: (sql: string, parameters?: unknown[]) => (statements.push(sql), dataSources[0].query(sql, parameters)) } as unknown as DataSource;
    return { quota: new ToolCallQuota(limitsConfig(limits, 'postgres'), counting), statements };
  };
  const school = () => `school-${randomUUID()}`;
  const counters = async (key: string) =>
    (await withOwner((client) => client.query<{ window_minute: string; count: number }>(`SELECT window_minute, count FROM tool_call_quota_counters WHERE key = $1 ORDER BY window_minute`, [key]))).rows.map(
      (row) => ({ window: Number(row.window_minute), count: row.count }),
    );
  const withOwner = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: database.ownerUrl });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    for (let i = 0; i < 2; i++) {
      const dataSource = createAppDataSource({ url: database.appUrl, entities: [], poolSize: 8 });
      await dataSource.initialize();
      dataSources.push(dataSource);
    }
  });
  afterAll(async () => {
    for (const dataSource of dataSources) await dataSource.destroy();
    await database?.drop();
  });

  it('a repeat counted on a second replica and given back there (the ledger answered it) leaves the school its other calls', async () => {
    const [a, b] = twoReplicas({ school: 3, user: 100 });
    const key = school();
    const user = `user-${randomUUID()}`;
    const deadline = T0 + 15_000;
    expect(await a.admit('call-1', deadline, key, user, T0)).toMatchObject({ charged: true, refusal: null });
    const repeat = await b.admit('call-1', deadline, key, user, T0);
    expect(repeat).toMatchObject({ charged: true, refusal: null });
    b.giveBack(repeat, key, user, T0);
    const others = [];
    for (let i = 2; i <= 6; i++) others.push((await (i % 2 ? a : b).admit(`call-${i}`, deadline, key, user, T0)).refusal);
    expect(others.filter((refusal) => refusal === null)).toHaveLength(2);
  });

  it('two replicas taking in turn together allow exactly the school limit, then both refuse', async () => {
    const [a, b] = twoReplicas({ school: 5, user: 100 });
    const key = school();
    const outcomes = [];
    for (let i = 0; i < 8; i++) outcomes.push(await (i % 2 ? b : a).take(key, `user-${i}`, T0));
    expect(outcomes).toEqual([null, null, null, null, null, 'SCHOOL_QUOTA_EXCEEDED', 'SCHOOL_QUOTA_EXCEEDED', 'SCHOOL_QUOTA_EXCEEDED']);
    expect(await counters(`school:${key}`)).toEqual([{ window: quotaWindow(T0), count: 5 }]);
  });

  it('a user is limited across replicas too, and a refused call counts for neither the user nor the school', async () => {
    const [a, b] = twoReplicas({ school: 4, user: 2 });
    const key = school();
    expect([await a.take(key, 'u', T0), await b.take(key, 'u', T0), await a.take(key, 'u', T0), await b.take(key, 'u', T0)]).toEqual([
      null,
      null,
      'USER_QUOTA_EXCEEDED',
      'USER_QUOTA_EXCEEDED',
    ]);
    // The two refusals took nothing from the school: its colleagues still have the other two calls.
    expect([await b.take(key, 'v', T0), await a.take(key, 'w', T0), await b.take(key, 'x', T0)]).toEqual([null, null, 'SCHOOL_QUOTA_EXCEEDED']);
    expect(await counters(`user:u`)).toEqual([{ window: quotaWindow(T0), count: 2 }]);
    expect(await counters(`school:${key}`)).toEqual([{ window: quotaWindow(T0), count: 4 }]);
  });

  it('concurrent takes across both replicas never exceed the limit: 160 at once for a limit of 50 grant exactly 50', async () => {
    const replicas = twoReplicas({ school: 50, user: 1_000 });
    const key = school();
    const outcomes = await Promise.all(Array.from({ length: 160 }, (_, i) => replicas[i % 2].take(key, `user-${i % 7}`, T0)));
    expect(outcomes.filter((outcome) => outcome === null)).toHaveLength(50);
    expect(outcomes.filter((outcome) => outcome === 'SCHOOL_QUOTA_EXCEEDED')).toHaveLength(110);
    expect(await counters(`school:${key}`)).toEqual([{ window: quotaWindow(T0), count: 50 }]);
  });

  it('concurrent takes near both limits: no user and no school ever over, and a user refusal spends no user call', async () => {
    const replicas = twoReplicas({ school: 30, user: 8 });
    const key = school();
    const users = Array.from({ length: 6 }, (_, i) => `near-${key}-${i}`);
    const outcomes = await Promise.all(Array.from({ length: 120 }, (_, i) => Promise.resolve(replicas[i % 2].take(key, users[i % users.length], T0)).then((outcome) => ({ user: users[i % users.length], outcome }))));
    const granted = outcomes.filter((o) => o.outcome === null);
    // Near the limit blocks are single calls; a school call handed back after a user refusal stays with its replica,
    // which may have no later call to spend it on (at most one per replica here).
    expect(granted.length).toBeLessThanOrEqual(30);
    expect(granted.length).toBeGreaterThanOrEqual(28);
    for (const user of users) {
      const mine = granted.filter((o) => o.user === user).length;
      expect(mine).toBeLessThanOrEqual(8);
      expect(await counters(`user:${user}`)).toEqual(mine ? [{ window: quotaWindow(T0), count: mine }] : []);
    }
    expect(await counters(`school:${key}`)).toEqual([{ window: quotaWindow(T0), count: 30 }]);
  });

  it("a school's takes do not wait for each other's tool transaction: the counter is taken and committed before it opens", async () => {
    const [a, b] = twoReplicas({ school: 100, user: 100 });
    const key = school();
    expect(await a.take(key, 'u1', T0)).toBeNull();
    // Replica A's tool call now runs its transaction and holds it open (a slow tool).
    const runner = dataSources[0].createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await runner.query(`SELECT 1`);
      const started = performance.now();
      expect(await b.take(key, 'u2', T0)).toBeNull();
      expect(await a.take(key, 'u3', T0)).toBeNull();
      expect(performance.now() - started).toBeLessThan(1_000);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
    // Both replicas reserved from the school's row while A's transaction was open.
    expect((await counters(`school:${key}`))[0].count).toBeGreaterThanOrEqual(2);
  });

  it('sabotage: a counter taken inside the tool transaction would make the next take of the school wait until it commits', async () => {
    // What the autocommit statement avoids, shown with the same function: taken inside an open transaction, the school
    // row stays locked, and another replica's take of that school cannot finish (lock_timeout stops it here).
    const key = school();
    const window = quotaWindow(T0);
    const runner = dataSources[0].createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    try {
      await runner.query(`SELECT reserve_tool_call_quota($1, $2, 100, 1)`, [`school:${key}`, window]);
      const other = new pg.Client({ connectionString: database.appUrl });
      await other.connect();
      try {
        await other.query(`SET lock_timeout = '300ms'`);
        await expect(other.query(`SELECT reserve_tool_call_quota($1, $2, 100, 1)`, [`school:${key}`, window])).rejects.toThrow(/lock timeout/);
      } finally {
        await other.end();
      }
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });

  it('windows roll over on the minute: a spent allowance is whole again in the next minute, not a millisecond before', async () => {
    const [a, b] = twoReplicas({ school: 2, user: 100 });
    const key = school();
    const end = T0 + MINUTE - 1;
    expect([await a.take(key, 'u', T0), await b.take(key, 'u', T0 + 30_000), await a.take(key, 'u', end)]).toEqual([null, null, 'SCHOOL_QUOTA_EXCEEDED']);
    expect([await b.take(key, 'u', T0 + MINUTE), await a.take(key, 'u', T0 + MINUTE + 1), await b.take(key, 'u', T0 + MINUTE + 2)]).toEqual([
      null,
      null,
      'SCHOOL_QUOTA_EXCEEDED',
    ]);
    expect(await counters(`school:${key}`)).toEqual([
      { window: quotaWindow(T0), count: 2 },
      { window: quotaWindow(T0) + 1, count: 2 },
    ]);
  });

  it('pruning deletes the minutes before the previous one, keeps the current and previous, and is safe on both replicas at once', async () => {
    const [a, b] = twoReplicas({ school: 100, user: 100 });
    const key = school();
    const base = T0 + 1_000 * MINUTE;
    for (const minutesAgo of [5, 3, 2, 1, 0]) await a.take(key, `prune-${key}`, base - minutesAgo * MINUTE);
    const others = (await withOwner((client) => client.query<{ n: number }>(`SELECT count(*)::int AS n FROM tool_call_quota_counters WHERE window_minute < $1 AND key NOT LIKE $2`, [quotaWindow(base) - 1, `%${key}`]))).rows[0].n;
    const deleted = await Promise.all([a.prune(base), b.prune(base)]);
    // Two keys (school and user) for each of the three old minutes, plus what earlier tests left in older windows.
    expect(deleted[0] + deleted[1]).toBe(6 + others);
    expect((await counters(`school:${key}`)).map((row) => row.window)).toEqual([quotaWindow(base) - 1, quotaWindow(base)]);
    expect(await Promise.all([a.prune(base), b.prune(base)])).toEqual([0, 0]);
  });

  it('a replica spends reserved blocks in memory: 200 concurrent takes of one school and one user cost 7 + 7 statements', async () => {
    const { quota, statements } = countedReplica({ school: 1_000_000, user: 1_000_000 });
    const key = school();
    const outcomes = await Promise.all(Array.from({ length: 200 }, () => quota.take(key, `busy-${key}`, T0)));
    expect(outcomes.every((outcome) => outcome === null)).toBe(true);
    const blocks = Math.ceil(200 / QUOTA_RESERVATION_BLOCK);
    expect(statements).toHaveLength(2 * blocks);
    expect(await counters(`school:${key}`)).toEqual([{ window: quotaWindow(T0), count: blocks * QUOTA_RESERVATION_BLOCK }]);
  });

  it('once the shared count is spent a replica refuses without asking again, until the next minute', async () => {
    const [a] = twoReplicas({ school: 3, user: 100 });
    const { quota: b, statements } = countedReplica({ school: 3, user: 100 });
    const key = school();
    for (let i = 0; i < 3; i++) expect(await a.take(key, `spent-${i}`, T0)).toBeNull();
    expect(await b.take(key, 'spent-b', T0)).toBe('SCHOOL_QUOTA_EXCEEDED');
    expect(statements).toHaveLength(1);
    expect(await b.take(key, 'spent-b', T0 + 59_000)).toBe('SCHOOL_QUOTA_EXCEEDED');
    expect(statements).toHaveLength(1);
    expect(await b.take(key, 'spent-b', T0 + MINUTE)).toBeNull();
  });

  it('the app role reaches the counters only through the two functions, never the table itself', async () => {
    const client = new pg.Client({ connectionString: database.appUrl });
    await client.connect();
    try {
      await expect(client.query(`SELECT * FROM tool_call_quota_counters`)).rejects.toThrow(/permission denied/);
      await expect(client.query(`UPDATE tool_call_quota_counters SET count = 0`)).rejects.toThrow(/permission denied/);
    } finally {
      await client.end();
    }
    expect(await replica({ school: 1, user: 1 }).take(school(), 'role-check', T0)).toBeNull();
  });
});

describe('quotas at the server: one school hitting its limit does not block another', () => {
  let testApp: TestApp;
  beforeAll(async () => {
    // These calls count in the real clock's minute: start with room, so that the whole block stays in one window.
    await awayFromMinuteEnd(15_000);
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

describe('quotas at the server: a repeat of a call is one call', () => {
  let testApp: TestApp;
  beforeAll(async () => {
    await awayFromMinuteEnd(25_000);
    testApp = await createTestApp({ TOOL_CALLS_PER_MINUTE_PER_SCHOOL: 100, TOOL_CALLS_PER_MINUTE_PER_USER: 2 });
  });
  afterAll(() => testApp?.close());

  it("repeats cost nothing, a repeat counted again is given back when the ledger answers it, and a committed write's repeat over quota gets its stored answer, never a refusal", async () => {
    const [schoolA] = testApp.demo.schools;
    const admin = schoolA.personas.schoolAdmin;
    const name = `Repeated ${randomUUID().slice(0, 6)}`;
    // A short deadline, so that this process forgets the call id (deadline plus grace) as another replica never knew it.
    const write = await dispatchEnvelope(admin, createDepartmentTool, { name }, { timeoutMs: 300 });
    const first = (await invokeTool(testApp.module, createDepartmentTool, write)) as { auditId?: string };
    expect(first.auditId).toEqual(expect.any(String));
    for (let i = 0; i < 3; i++) expect(await invokeTool(testApp.module, createDepartmentTool, write)).toMatchObject({ auditId: first.auditId });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    // Counted again (forgotten), answered from the ledger, given back: the user still has the second of their two calls.
    expect(await invokeTool(testApp.module, createDepartmentTool, write)).toMatchObject({ auditId: first.auditId });
    const list = async () => invokeTool(testApp.module, listDepartmentsTool, await dispatchEnvelope(admin, listDepartmentsTool, {}));
    expect(await list()).toHaveProperty('data');
    expect(await list()).toEqual({ error: USER_QUOTA_ERROR, code: 'USER_QUOTA_EXCEEDED' });
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    // Over quota now: the write that committed is still answered as it was, not refused.
    expect(await invokeTool(testApp.module, createDepartmentTool, write)).toMatchObject({ auditId: first.auditId });
    const other = await dispatchEnvelope(admin, createDepartmentTool, { name: `${name} again` });
    expect(await invokeTool(testApp.module, createDepartmentTool, other)).toEqual({ error: USER_QUOTA_ERROR, code: 'USER_QUOTA_EXCEEDED' });
    expect(await testApp.owner.query(`SELECT count(*)::int AS count FROM departments WHERE name LIKE $1`, [`${name}%`])).toEqual([{ count: 1 }]);
  });
});
