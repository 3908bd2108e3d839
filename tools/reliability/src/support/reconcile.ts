import { canonicalJson } from '@naalya/agent-tools';
import type pg from 'pg';
import type { CallOutcome } from './caller.js';
import { maskingViolation } from './error-text.js';
import { emptyCounts, type PhaseCounts } from './phase-row.js';

/** Counts, per effect key, the domain rows a phase's writes produced (for example departments by their unique name). */
export type EffectProbe = (keys: string[]) => Promise<Map<string, number>>;

export const departmentsByName =
  (owner: pg.Client): EffectProbe =>
  async (names) => {
    const { rows } = await owner.query<{ name: string; count: string }>(
      `SELECT name, count(*) FROM departments WHERE name = ANY($1) GROUP BY name`,
      [names],
    );
    return new Map(rows.map((row) => [row.name, Number(row.count)]));
  };

const countBy = async (owner: pg.Client, sql: string, callIds: string[]) => {
  const { rows } = await owner.query<{ call_id: string; count: string }>(sql, [callIds]);
  return new Map(rows.map((row) => [row.call_id, Number(row.count)]));
};

export type Reconciliation = { counts: PhaseCounts; details: string[] };

/**
 * What the callers saw against what the database holds, read as the owner (no RLS): the ledger, the audit log and the
 * domain rows of every write, grouped by call id (a call id may have been delivered many times, and its copies count as
 * one call). A write's effect must match its ledger row and its audit row one to one; the ledger and audit rows written
 * since `since` must all belong to the phase's calls.
 */
export const reconcile = async (input: {
  owner: pg.Client;
  outcomes: CallOutcome[];
  effects?: EffectProbe;
  since: Date;
}): Promise<Reconciliation> => {
  const { owner, outcomes } = input;
  const counts = emptyCounts();
  const details: string[] = [];
  const note = (line: string) => {
    if (details.length < 20) details.push(line);
  };

  for (const outcome of outcomes) {
    counts.calls += 1;
    counts[outcome.kind] += 1;
    const violation = outcome.error === undefined ? null : maskingViolation(outcome.error, outcome.code);
    if (violation) {
      counts.unmasked += 1;
      note(`unmasked (${violation}) from ${outcome.tool}: ${outcome.error?.slice(0, 200)}`);
    }
  }

  const writes = new Map<string, CallOutcome[]>();
  for (const outcome of outcomes.filter((candidate) => candidate.mutating)) {
    writes.set(outcome.callId, [...(writes.get(outcome.callId) ?? []), outcome]);
  }
  const callIds = [...writes.keys()];
  // Every id a call went out under (a caller that re-sent under new ids): its rows under any of them are its rows.
  const idsOf = (callId: string) => [callId, ...new Set((writes.get(callId) ?? []).flatMap((copy) => copy.sentAs ?? []))];
  const allIds = callIds.flatMap(idsOf);
  const ledger = await countBy(owner, `SELECT call_id, count(*) FROM tool_call_ledger WHERE call_id = ANY($1) GROUP BY call_id`, allIds);
  const audits = await countBy(owner, `SELECT call_id, count(*) FROM audit_log WHERE call_id = ANY($1) GROUP BY call_id`, allIds);
  const sum = (counts: Map<string, number>, callId: string) => idsOf(callId).reduce((total, id) => total + (counts.get(id) ?? 0), 0);
  const keys = [...new Set(outcomes.flatMap((outcome) => (outcome.effectKey ? [outcome.effectKey] : [])))];
  const effects = input.effects && keys.length ? await input.effects(keys) : new Map<string, number>();

  for (const [callId, copies] of writes) {
    const key = copies.find((copy) => copy.effectKey)?.effectKey;
    const inLedger = sum(ledger, callId);
    const audited = sum(audits, callId);
    // Without an effect key the ledger row stands for the effect (the phase has no domain probe for this tool).
    const effect = key === undefined ? inLedger : (effects.get(key) ?? 0);
    const kinds = new Set(copies.map((copy) => copy.kind));
    const label = `${copies[0].tool} ${callId.slice(0, 12)}`;
    if (effect > 1 || audited > 1 || inLedger > 1) {
      counts.duplicated += 1;
      note(`duplicated: ${label} has ${effect} effects, ${audited} audit rows and ${inLedger} ledger rows`);
    }
    if (kinds.has('ok') && effect === 0) {
      counts.lost += 1;
      note(`lost: ${label} was reported done and did not happen`);
    }
    if (kinds.has('refused') && effect > 0) {
      counts.ghost += 1;
      note(`ghost: ${label} was refused (${copies.find((copy) => copy.kind === 'refused')?.error}) and happened`);
    }
    if (!kinds.has('ok') && !kinds.has('refused') && effect > 0) counts.recovered += 1;
    if ((effect > 0) !== (inLedger > 0) || (effect > 0) !== (audited > 0)) {
      counts.unexpected += 1;
      note(`unexpected: ${label} has ${effect} effects, ${inLedger} ledger rows, ${audited} audit rows`);
    }
    // Canonical: a stored answer comes back from jsonb with its keys in another order.
    const replies = new Set(copies.filter((copy) => copy.kind === 'ok').map((copy) => canonicalJson(copy.result)));
    if (replies.size > 1) {
      counts.unexpected += 1;
      note(`unexpected: ${label} got ${replies.size} different successful replies`);
    }
  }

  // Rows no call of the phase accounts for: a write the callers never asked for.
  const { rows: strays } = await owner.query<{ source: string; count: string }>(
    `SELECT 'ledger' AS source, count(*) FROM tool_call_ledger WHERE created_at >= $1 AND NOT (call_id = ANY($2))
     UNION ALL SELECT 'audit', count(*) FROM audit_log WHERE created_at >= $1 AND source = 'agent' AND (call_id IS NULL OR NOT (call_id = ANY($2)))`,
    [input.since, allIds],
  );
  for (const stray of strays) {
    const count = Number(stray.count);
    if (count > 0) {
      counts.unexpected += count;
      note(`unexpected: ${count} ${stray.source} rows since the phase began belong to no call of it`);
    }
  }
  return { counts, details };
};
