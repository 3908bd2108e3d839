import type pg from 'pg';

/**
 * A digest of every row of every table a tool call can change, read as the owner: equal before and after a batch
 * of attacks means the attacks changed nothing anywhere, including effects no ledger row or marker would reveal (a
 * replayed delete, a member added in another school). The run tables are left out: opening runs for the attacks'
 * dispatch tokens writes them, and a run finishing on its own is not an effect of a tool call. So are the shared
 * tool-call quota counters: every call with a valid dispatch token spends allowance, refused or not (a flood brake, not
 * an effect of the call).
 */
export type Fingerprint = Map<string, string>;

const IGNORED = /^(agent_|migrations$|typeorm_|tool_call_quota_counters$)/;

/** Every table, or with `schoolId` only that school's rows (its row in schools, and its rows of every tenant table). */
export const domainFingerprint = async (owner: pg.Client, schoolId?: string): Promise<Fingerprint> => {
  const { rows: tables } = await owner.query<{ table_name: string; tenant: boolean }>(
    `SELECT t.table_name, EXISTS (SELECT 1 FROM information_schema.columns c
                                  WHERE c.table_schema = 'public' AND c.table_name = t.table_name AND c.column_name = 'school_id') AS tenant
       FROM information_schema.tables t WHERE t.table_schema = 'public' AND t.table_type = 'BASE TABLE' ORDER BY t.table_name`,
  );
  const fingerprint: Fingerprint = new Map();
  for (const { table_name: table, tenant } of tables) {
    if (IGNORED.test(table)) continue;
    const filter = schoolId === undefined ? '' : tenant ? 'WHERE t.school_id = $1' : table === 'schools' ? 'WHERE t.id = $1' : null;
    if (filter === null) continue;
    const { rows } = await owner.query<{ digest: string | null; count: string }>(
      `SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest, count(*) FROM "${table}" t ${filter}`,
      schoolId === undefined ? [] : [schoolId],
    );
    fingerprint.set(table, `${rows[0]?.count}:${rows[0]?.digest ?? ''}`);
  }
  return fingerprint;
};

/** The tables whose rows differ (or that appeared or disappeared), with their row counts before and after. */
export const fingerprintChanges = (before: Fingerprint, after: Fingerprint): string[] =>
  [...new Set([...before.keys(), ...after.keys()])]
    .filter((table) => before.get(table) !== after.get(table))
    .map((table) => `${table} (${before.get(table)?.split(':')[0] ?? 'absent'} → ${after.get(table)?.split(':')[0] ?? 'absent'} rows)`);
