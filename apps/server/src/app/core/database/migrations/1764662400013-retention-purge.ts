import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';
import { ACTOR_SETTING as ACTOR } from '../row-level-security.js';

/** The audit log is never purged younger than this, whatever the caller asks: a school may have to keep it for years. */
export const AUDIT_RETENTION_FLOOR_DAYS = 365;

/**
 * Retention: one narrow SECURITY DEFINER function, retention_purge, deletes what has outlived its setting across every
 * school. The app role runs under row-level security (it sees one owner's rows at a time) and the server runs without
 * the owner's URL, so the purge cannot be a plain DELETE from the app. Each call deletes at most p_batch rows of each
 * kind and returns how many it deleted; the caller repeats while a kind comes back full.
 *
 * Several replicas may purge at once: every batch selects its rows FOR UPDATE SKIP LOCKED, so two calls take disjoint
 * rows and neither waits on the other (nor on a run the sweeper or the ingest holds). Only ended runs and their rows
 * go: the events and ledger rows of a run still queued, running or interrupted are kept whatever their age, since a
 * resume replays the events and a retried call relies on its ledger row. The function floors every period (1 day, and
 * AUDIT_RETENTION_FLOOR_DAYS for the audit log), so even a caller passing 0 cannot empty the tables.
 *
 * The owner is bound by row-level security too (FORCE), so the function's deletes need policies of their own, each
 * for the owner only (TO CURRENT_USER, as the other lookups): DELETE, and UPDATE for the FOR UPDATE row locks.
 *
 * Deleting a thread (DELETE /agent/threads/:id): the app role may delete agent_threads rows, its owner's only (a
 * restrictive policy on top of the tenant and owner ones, so not even a platform frame deletes another's thread); the
 * thread's runs, their events and its approvals go by ON DELETE CASCADE. audit_log has no key onto them: it stays.
 */
export class RetentionPurge1764662400013 implements MigrationInterface {
  name = 'RetentionPurge1764662400013';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE INDEX ix_agent_run_events_created ON agent_run_events (created_at);
      CREATE INDEX ix_agent_runs_ended ON agent_runs (updated_at) WHERE status IN ('finished', 'failed', 'cancelled');
      CREATE INDEX ix_tool_call_approvals_expires ON tool_call_approvals (expires_at);
      CREATE INDEX ix_tool_call_ledger_created ON tool_call_ledger (created_at);
      CREATE INDEX ix_audit_log_created ON audit_log (created_at);

      CREATE POLICY agent_run_events_retention_lock ON agent_run_events FOR UPDATE TO CURRENT_USER USING (true);
      CREATE POLICY agent_run_events_retention_read ON agent_run_events FOR SELECT TO CURRENT_USER USING (true);
      CREATE POLICY agent_run_events_retention_delete ON agent_run_events FOR DELETE TO CURRENT_USER USING (true);
      CREATE POLICY agent_runs_retention_delete ON agent_runs FOR DELETE TO CURRENT_USER USING (true);
      CREATE POLICY tool_call_approvals_retention_lock ON tool_call_approvals FOR UPDATE TO CURRENT_USER USING (true);
      CREATE POLICY tool_call_approvals_retention_delete ON tool_call_approvals FOR DELETE TO CURRENT_USER USING (true);
      CREATE POLICY tool_call_ledger_retention_lock ON tool_call_ledger FOR UPDATE TO CURRENT_USER USING (true);
      CREATE POLICY tool_call_ledger_retention_delete ON tool_call_ledger FOR DELETE TO CURRENT_USER USING (true);
      CREATE POLICY audit_log_retention_read ON audit_log FOR SELECT TO CURRENT_USER USING (true);
      CREATE POLICY audit_log_retention_lock ON audit_log FOR UPDATE TO CURRENT_USER USING (true);
      CREATE POLICY audit_log_retention_delete ON audit_log FOR DELETE TO CURRENT_USER USING (true);

      GRANT DELETE ON agent_threads TO ${APP_GROUP_ROLE};
      CREATE POLICY agent_threads_owner_delete ON agent_threads AS RESTRICTIVE FOR DELETE TO ${APP_GROUP_ROLE} USING (owner_id = ${ACTOR});
    `);

    await queryRunner.query(`
      CREATE FUNCTION retention_purge(
          p_run_event_days integer, p_run_days integer, p_approval_days integer, p_ledger_days integer,
          p_audit_days integer, p_batch integer)
        RETURNS TABLE (kind text, deleted integer)
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
        DECLARE
          v_batch integer := LEAST(GREATEST(p_batch, 1), 10000);
          v_count integer;
        BEGIN
          -- Ended runs first: their events and approvals go with them (ON DELETE CASCADE). The steps below leave the rows
          -- of a run that is due alone, so a row is counted under one kind only, whichever replica deletes it.
          WITH doomed AS (
            SELECT r.id FROM public.agent_runs r
             WHERE r.status IN ('finished', 'failed', 'cancelled')
               AND r.updated_at < now() - make_interval(days => GREATEST(p_run_days, 1))
             ORDER BY r.updated_at LIMIT v_batch FOR UPDATE SKIP LOCKED),
          gone AS (DELETE FROM public.agent_runs r USING doomed WHERE r.id = doomed.id RETURNING 1)
          SELECT count(*)::integer INTO v_count FROM gone;
          kind := 'runs'; deleted := v_count; RETURN NEXT;

          WITH doomed AS (
            SELECT e.run_id, e.seq FROM public.agent_run_events e JOIN public.agent_runs r ON r.id = e.run_id
             WHERE e.created_at < now() - make_interval(days => GREATEST(p_run_event_days, 1))
               AND r.status IN ('finished', 'failed', 'cancelled')
               -- A run due itself takes its events along (above, or in the next call if its batch was full).
               AND r.updated_at >= now() - make_interval(days => GREATEST(p_run_days, 1))
             ORDER BY e.created_at LIMIT v_batch FOR UPDATE OF e SKIP LOCKED),
          gone AS (DELETE FROM public.agent_run_events e USING doomed WHERE e.run_id = doomed.run_id AND e.seq = doomed.seq RETURNING 1)
          SELECT count(*)::integer INTO v_count FROM gone;
          kind := 'run_events'; deleted := v_count; RETURN NEXT;

          -- An approval is only ever read until it expires (a run that ends voids it at once), so its age counts from then.
          WITH doomed AS (
            SELECT a.id FROM public.tool_call_approvals a
             WHERE a.expires_at < now() - make_interval(days => GREATEST(p_approval_days, 1))
               AND NOT EXISTS (SELECT 1 FROM public.agent_runs r
                                WHERE r.id = a.run_id AND r.status IN ('finished', 'failed', 'cancelled')
                                  AND r.updated_at < now() - make_interval(days => GREATEST(p_run_days, 1)))
             ORDER BY a.expires_at LIMIT v_batch FOR UPDATE OF a SKIP LOCKED),
          gone AS (DELETE FROM public.tool_call_approvals a USING doomed WHERE a.id = doomed.id RETURNING 1)
          SELECT count(*)::integer INTO v_count FROM gone;
          kind := 'approvals'; deleted := v_count; RETURN NEXT;

          WITH doomed AS (
            SELECT l.call_id FROM public.tool_call_ledger l
             WHERE l.created_at < now() - make_interval(days => GREATEST(p_ledger_days, 1))
               AND NOT EXISTS (SELECT 1 FROM public.agent_runs r
                                WHERE r.id = l.run_id AND r.status IN ('queued', 'running', 'interrupted'))
             ORDER BY l.created_at LIMIT v_batch FOR UPDATE OF l SKIP LOCKED),
          gone AS (DELETE FROM public.tool_call_ledger l USING doomed WHERE l.call_id = doomed.call_id RETURNING 1)
          SELECT count(*)::integer INTO v_count FROM gone;
          kind := 'ledger'; deleted := v_count; RETURN NEXT;

          WITH doomed AS (
            SELECT a.id FROM public.audit_log a
             WHERE a.created_at < now() - make_interval(days => GREATEST(p_audit_days, ${AUDIT_RETENTION_FLOOR_DAYS}))
             ORDER BY a.created_at LIMIT v_batch FOR UPDATE SKIP LOCKED),
          gone AS (DELETE FROM public.audit_log a USING doomed WHERE a.id = doomed.id RETURNING 1)
          SELECT count(*)::integer INTO v_count FROM gone;
          kind := 'audit'; deleted := v_count; RETURN NEXT;
        END
        $$;
      REVOKE ALL ON FUNCTION retention_purge(integer, integer, integer, integer, integer, integer) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION retention_purge(integer, integer, integer, integer, integer, integer) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP POLICY IF EXISTS agent_threads_owner_delete ON agent_threads;
      REVOKE DELETE ON agent_threads FROM ${APP_GROUP_ROLE};
      DROP FUNCTION IF EXISTS retention_purge(integer, integer, integer, integer, integer, integer);
      DROP POLICY IF EXISTS agent_run_events_retention_lock ON agent_run_events;
      DROP POLICY IF EXISTS agent_run_events_retention_read ON agent_run_events;
      DROP POLICY IF EXISTS agent_run_events_retention_delete ON agent_run_events;
      DROP POLICY IF EXISTS agent_runs_retention_delete ON agent_runs;
      DROP POLICY IF EXISTS tool_call_approvals_retention_lock ON tool_call_approvals;
      DROP POLICY IF EXISTS tool_call_approvals_retention_delete ON tool_call_approvals;
      DROP POLICY IF EXISTS tool_call_ledger_retention_lock ON tool_call_ledger;
      DROP POLICY IF EXISTS tool_call_ledger_retention_delete ON tool_call_ledger;
      DROP POLICY IF EXISTS audit_log_retention_read ON audit_log;
      DROP POLICY IF EXISTS audit_log_retention_lock ON audit_log;
      DROP POLICY IF EXISTS audit_log_retention_delete ON audit_log;
      DROP INDEX IF EXISTS ix_agent_run_events_created, ix_agent_runs_ended, ix_tool_call_approvals_expires,
        ix_tool_call_ledger_created, ix_audit_log_created;
    `);
  }
}
