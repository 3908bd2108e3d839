import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';

/**
 * Tool-call quotas counted in PostgreSQL, so that every server replica spends the same allowance.
 *
 * The counters are platform-level, not tenant data: a row is a key ('school:<id>' or 'user:<id>'), a minute and a
 * count, with no school_id column and nothing a school could read about another. The app role gets no privilege on the
 * table at all, only EXECUTE on two narrow SECURITY DEFINER functions, which run outside any tenant frame (the quota is
 * taken before the call's unit of work opens). So no RLS policy is needed, and none could be written: the take has no
 * tenant set.
 *
 * UNLOGGED: no WAL per tool call; a crash of PostgreSQL empties the table, which forgets the current minute (what a
 * restart of the in-memory count did), and a standby promoted after a failover starts with no counts. A flood brake
 * tolerates both.
 *
 * reserve_tool_call_quota hands a server process a block of calls of one key's minute (a school's or a user's), which
 * the process then spends in memory; it runs as its own autocommit statement, so the counter row is locked for that
 * statement only (microseconds), never for a tool call's transaction, and a school's calls do not queue behind each
 * other's work. A block is at most a sixteenth of what is left of the limit and at least one call, and never goes
 * past the limit: the sum of all blocks, and so the calls all replicas allow, is capped at the limit exactly, and near
 * the limit blocks are single calls, so replicas get the last calls in the order they ask. One row per statement: no
 * lock order to get wrong.
 */
export class SharedToolCallQuota1764662400009 implements MigrationInterface {
  name = 'SharedToolCallQuota1764662400009';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE UNLOGGED TABLE tool_call_quota_counters (
        key text NOT NULL,
        window_minute bigint NOT NULL,
        count integer NOT NULL,
        PRIMARY KEY (key, window_minute)
      );
      REVOKE ALL ON tool_call_quota_counters FROM PUBLIC;

      CREATE FUNCTION reserve_tool_call_quota(p_key text, p_window bigint, p_limit integer, p_want integer)
        RETURNS integer
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
        DECLARE
          v_taken integer;
          v_granted integer;
        BEGIN
          INSERT INTO public.tool_call_quota_counters (key, window_minute, count) VALUES (p_key, p_window, 0)
            ON CONFLICT (key, window_minute) DO NOTHING;
          SELECT c.count INTO v_taken FROM public.tool_call_quota_counters c
           WHERE c.key = p_key AND c.window_minute = p_window FOR UPDATE;
          -- At most a sixteenth of what is left, at least one, never past the limit: near the limit, one call at a time.
          v_granted := LEAST(p_want, GREATEST(1, (p_limit - v_taken) / 16), p_limit - v_taken);
          IF v_granted <= 0 THEN
            RETURN 0;
          END IF;
          UPDATE public.tool_call_quota_counters SET count = v_taken + v_granted WHERE key = p_key AND window_minute = p_window;
          RETURN v_granted;
        END
        $$;
      REVOKE ALL ON FUNCTION reserve_tool_call_quota(text, bigint, integer, integer) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION reserve_tool_call_quota(text, bigint, integer, integer) TO ${APP_GROUP_ROLE};

      -- Idempotent: replicas that prune at the same moment delete the same rows once between them.
      CREATE FUNCTION prune_tool_call_quota(p_before_window bigint)
        RETURNS integer
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          WITH gone AS (DELETE FROM public.tool_call_quota_counters WHERE window_minute < p_before_window RETURNING 1)
          SELECT count(*)::integer FROM gone
        $$;
      REVOKE ALL ON FUNCTION prune_tool_call_quota(bigint) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION prune_tool_call_quota(bigint) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS prune_tool_call_quota(bigint);
      DROP FUNCTION IF EXISTS reserve_tool_call_quota(text, bigint, integer, integer);
      DROP TABLE IF EXISTS tool_call_quota_counters;
    `);
  }
}
