import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../../testing/test-app.js';
import { createTestApp } from '../../../testing/test-app.js';
import { createPeerApp, testRmqNames } from '../fixtures/agent-run-test-kit.js';
import { serverMetrics } from '../../core/observability/server-metrics.js';
import { RETENTION_KINDS, RetentionPurge, type RetentionCounts } from './retention-purge.service.js';

// Small batches, so two replicas purging at once take many rounds each and really compete for the same rows.
const RETENTION = {
  RETENTION_PURGE_BATCH: 5,
  RUN_EVENT_RETENTION_DAYS: 30,
  AGENT_RUN_RETENTION_DAYS: 90,
  APPROVAL_RETENTION_DAYS: 30,
  TOOL_CALL_LEDGER_RETENTION_DAYS: 30,
  AUDIT_RETENTION_DAYS: 365,
};

let testApp: TestApp;
let peer: INestApplication;

beforeAll(async () => {
  testApp = await createTestApp(RETENTION);
  // A second replica on the same database; the purge needs no broker, so neither connects one.
  peer = await createPeerApp(testApp, testRmqNames(), { ingest: false, overrides: RETENTION });
});
afterAll(async () => {
  await peer?.close();
  await testApp?.close();
});

const ago = (days: number) => `now() - make_interval(days => ${days})`;
const sql = (text: string, parameters: unknown[] = []) => testApp.owner.query(text, parameters);

/** The rows one school's teacher leaves behind, aged; `doomed` and `kept` name every row the test seeded, by table. */
type Seeded = { doomed: Record<string, string[]>; kept: Record<string, string[]> };

const seedSchool = async (schoolIndex: 0 | 1): Promise<Seeded> => {
  const school = testApp.demo.schools[schoolIndex];
  const owner = school.personas.teacher;
  const doomed: Record<string, string[]> = { runs: [], events: [], approvals: [], ledger: [], audit: [] };
  const kept: Record<string, string[]> = { runs: [], events: [], approvals: [], ledger: [], audit: [] };
  const thread = async () => {
    const id = randomUUID();
    await sql(`INSERT INTO agent_threads (id, school_id, owner_id) VALUES ($1, $2, $3)`, [id, school.id, owner.id]);
    return id;
  };
  const run = async (threadId: string, status: string, updatedDaysAgo: number) => {
    const id = randomUUID();
    await sql(`INSERT INTO agent_runs (id, thread_id, school_id, owner_id, status, message, updated_at) VALUES ($1, $2, $3, $4, $5, 'hello', ${ago(updatedDaysAgo)})`, [
      id,
      threadId,
      school.id,
      owner.id,
      status,
    ]);
    return id;
  };
  const events = async (runId: string, count: number, daysAgo: number) => {
    const ids: string[] = [];
    for (let index = 0; index < count; index += 1) {
      const [{ seq }] = (await sql(
        `INSERT INTO agent_run_events (run_id, seq, school_id, owner_id, message_id, type, payload, created_at)
         SELECT $1, COALESCE(max(seq), 0) + 1, $2, $3, $4, 'TEXT_MESSAGE_CONTENT', '{}'::jsonb, ${ago(daysAgo)} FROM agent_run_events WHERE run_id = $1
         RETURNING seq`,
        [runId, school.id, owner.id, randomUUID()],
      )) as { seq: number }[];
      ids.push(`${runId}:${seq}`);
    }
    return ids;
  };
  const approval = async (threadId: string, runId: string, expiredDaysAgo: number) => {
    const [{ id }] = (await sql(
      `INSERT INTO tool_call_approvals (school_id, thread_id, run_id, interrupt_id, call_id, event, args_hash, user_id, approved, answer, expires_at)
       VALUES ($1, $2, $3, 'i', $4, 'departments.create', 'h', $5, true, 'yes', ${ago(expiredDaysAgo)}) RETURNING id`,
      [school.id, threadId, runId, randomUUID(), owner.id],
    )) as { id: string }[];
    return id;
  };
  const ledger = async (daysAgo: number, runId: string | null) => {
    const callId = randomUUID();
    await sql(
      `INSERT INTO tool_call_ledger (call_id, school_id, event, request_hash, actor_id, result, run_id, created_at)
       VALUES ($1, $2, 'departments.create', 'h', $3, '{}'::jsonb, $4, ${ago(daysAgo)})`,
      [callId, school.id, owner.id, runId],
    );
    return callId;
  };
  const audit = async (daysAgo: number) => {
    const [{ id }] = (await sql(
      `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, source, created_at)
       VALUES ($1, $2, 'staff', 'create', 'department', 'agent', ${ago(daysAgo)}) RETURNING id`,
      [school.id, owner.id],
    )) as { id: string }[];
    return id;
  };

  const old = await thread();
  // Ended runs past AGENT_RUN_RETENTION_DAYS: they go, and their events and approvals with them.
  for (const status of ['finished', 'failed', 'cancelled']) {
    const runId = await run(old, status, 100);
    doomed['runs'].push(runId);
    doomed['events'].push(...(await events(runId, 5, 100)));
    doomed['approvals'].push(await approval(old, runId, 100));
  }
  // A recently ended run stays; its events past RUN_EVENT_RETENTION_DAYS go, its young ones stay.
  const recent = await run(old, 'finished', 10);
  kept['runs'].push(recent);
  doomed['events'].push(...(await events(recent, 12, 40)));
  kept['events'].push(...(await events(recent, 3, 1)));
  for (let index = 0; index < 4; index += 1) doomed['approvals'].push(await approval(old, recent, 40));
  kept['approvals'].push(await approval(old, recent, 5));
  // An approval still valid is never touched.
  kept['approvals'].push(await approval(old, recent, -1));

  // A run still going keeps its rows, however old: a resume replays its events and a retried call needs its ledger row.
  const live = await thread();
  const running = await run(live, 'running', 200);
  kept['runs'].push(running);
  kept['events'].push(...(await events(running, 6, 200)));
  for (let index = 0; index < 3; index += 1) kept['ledger'].push(await ledger(200, running));

  for (let index = 0; index < 9; index += 1) doomed['ledger'].push(await ledger(40, null));
  for (let index = 0; index < 2; index += 1) doomed['ledger'].push(await ledger(40, recent));
  for (let index = 0; index < 2; index += 1) kept['ledger'].push(await ledger(5, null));

  // The audit log keeps its own, longer period: only rows past AUDIT_RETENTION_DAYS go.
  for (let index = 0; index < 8; index += 1) doomed['audit'].push(await audit(400));
  for (let index = 0; index < 3; index += 1) kept['audit'].push(await audit(200));
  for (let index = 0; index < 2; index += 1) kept['audit'].push(await audit(10));
  return { doomed, kept };
};

/** Which of the given ids each table still holds. */
const present = async (ids: Record<string, string[]>): Promise<Record<string, string[]>> => {
  const query = async (text: string, values: string[]) => ((await sql(text, [values])) as { id: string }[]).map((row) => row.id).sort();
  return {
    runs: await query(`SELECT id::text FROM agent_runs WHERE id::text = ANY($1)`, ids['runs']),
    events: await query(`SELECT run_id::text || ':' || seq AS id FROM agent_run_events WHERE run_id::text || ':' || seq = ANY($1)`, ids['events']),
    approvals: await query(`SELECT id::text FROM tool_call_approvals WHERE id::text = ANY($1)`, ids['approvals']),
    ledger: await query(`SELECT call_id AS id FROM tool_call_ledger WHERE call_id = ANY($1)`, ids['ledger']),
    audit: await query(`SELECT id::text FROM audit_log WHERE id::text = ANY($1)`, ids['audit']),
  };
};
const sorted = (ids: Record<string, string[]>) => Object.fromEntries(Object.entries(ids).map(([table, values]) => [table, [...values].sort()]));
const merge = (a: Record<string, string[]>, b: Record<string, string[]>) =>
  Object.fromEntries(Object.keys(a).map((table) => [table, [...a[table], ...(b[table] ?? [])]]));
/** naalya_retention_purged_rows_total by kind, as /metrics would serve it now. */
const purgedRows = async (): Promise<RetentionCounts> => {
  const values = (await serverMetrics.retentionPurged.get()).values;
  return Object.fromEntries(RETENTION_KINDS.map((kind) => [kind, values.find((value) => value.labels['kind'] === kind)?.value ?? 0])) as RetentionCounts;
};

const add = (a: RetentionCounts, b: RetentionCounts): RetentionCounts => ({
  runs: a.runs + b.runs,
  run_events: a.run_events + b.run_events,
  approvals: a.approvals + b.approvals,
  ledger: a.ledger + b.ledger,
  audit: a.audit + b.audit,
});
const tableSizes = async () =>
  ((await sql(`SELECT (SELECT count(*) FROM agent_runs)::int AS runs, (SELECT count(*) FROM agent_run_events)::int AS events,
                      (SELECT count(*) FROM tool_call_approvals)::int AS approvals, (SELECT count(*) FROM tool_call_ledger)::int AS ledger,
                      (SELECT count(*) FROM audit_log)::int AS audit`)) as Record<string, number>[])[0];

describe('retention purge', () => {
  it('two replicas purging at once delete every row past its setting in both schools exactly once, keep every young row, the rows of a live run and the audit log inside its period', async () => {
    const [first, second] = [await seedSchool(0), await seedSchool(1)];
    const doomed = merge(first.doomed, second.doomed);
    const kept = merge(first.kept, second.kept);
    const before = await tableSizes();

    const purgedBefore = await purgedRows();
    const [a, b] = await Promise.all([testApp.app.get(RetentionPurge).purge(), peer.get(RetentionPurge).purge()]);

    // Each row counted once, under one kind, by whichever replica took it: the counts add up to what was seeded to go
    // (an ended run's events and approvals go with it, counted as the run).
    expect(add(a, b)).toEqual({ runs: 6, run_events: 24, approvals: 8, ledger: 22, audit: 16 });
    // The /metrics counter (one registry for both replicas here, as each process has its own) counted the same rows.
    const purgedAfter = await purgedRows();
    expect(Object.fromEntries(RETENTION_KINDS.map((kind) => [kind, purgedAfter[kind] - purgedBefore[kind]]))).toEqual(add(a, b));
    expect(await present(doomed)).toEqual({ runs: [], events: [], approvals: [], ledger: [], audit: [] });
    expect(await present(kept)).toEqual(sorted(kept));
    // Nothing the test did not seed (the demo's own rows, all young) was touched.
    const after = await tableSizes();
    expect(after).toEqual({
      runs: before['runs'] - doomed['runs'].length,
      events: before['events'] - doomed['events'].length,
      approvals: before['approvals'] - doomed['approvals'].length,
      ledger: before['ledger'] - doomed['ledger'].length,
      audit: before['audit'] - doomed['audit'].length,
    });
    // Nothing left for the next interval.
    expect(await testApp.app.get(RetentionPurge).purge()).toEqual({ runs: 0, run_events: 0, approvals: 0, ledger: 0, audit: 0 });
  });

  it('the audit log is kept at least a year: retention_purge called by the app role with 0 days deletes no audit row younger than 365 days and no other row younger than a day', async () => {
    const school = testApp.demo.schools[0];
    const owner = school.personas.teacher;
    const [{ id: audit }] = (await sql(
      `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, source, created_at)
       VALUES ($1, $2, 'staff', 'create', 'department', 'http', now() - interval '364 days') RETURNING id`,
      [school.id, owner.id],
    )) as { id: string }[];
    const callId = randomUUID();
    await sql(`INSERT INTO tool_call_ledger (call_id, school_id, event, request_hash, actor_id, result, created_at) VALUES ($1, $2, 'x', 'h', $3, '{}', now() - interval '23 hours')`, [
      callId,
      school.id,
      owner.id,
    ]);
    const app = new pg.Client({ connectionString: testApp.database.appUrl });
    await app.connect();
    try {
      const rows = (await app.query(`SELECT kind, deleted FROM retention_purge(0, 0, 0, 0, 0, 1000)`)).rows as { kind: string; deleted: number }[];
      expect(rows.find((row) => row.kind === 'audit')?.deleted).toBe(0);
      // The app role may not delete audit or ledger rows itself: the purge is the only way, and it keeps its floors.
      await expect(app.query(`DELETE FROM audit_log WHERE id = $1`, [audit])).rejects.toThrow(/permission denied/);
      await expect(app.query(`DELETE FROM tool_call_ledger WHERE call_id = $1`, [callId])).rejects.toThrow(/permission denied/);
    } finally {
      await app.end();
    }
    expect(await sql(`SELECT id FROM audit_log WHERE id = $1`, [audit])).toHaveLength(1);
    expect(await sql(`SELECT call_id FROM tool_call_ledger WHERE call_id = $1`, [callId])).toHaveLength(1);
  });
});
