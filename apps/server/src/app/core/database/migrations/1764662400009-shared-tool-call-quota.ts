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
 * take_tool_call_quota runs as its own autocommit statement: the counter rows are locked only for that statement
 * (microseconds), never for the tool call's transaction, so a school's calls do not queue behind each other's work.
 * School row first, user row second in every call (one lock order, so two takes cannot deadlock); when the user is over
 * the limit, the school's increment is taken back in the same statement, before anyone else can read it (the row is
 * still locked), so a refused call counts nowhere, as before.
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

      CREATE FUNCTION take_tool_call_quota(p_school text, p_user text, p_window bigint, p_school_limit integer, p_user_limit integer)
        RETURNS text
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
        DECLARE
          taken integer;
        BEGIN
          INSERT INTO public.tool_call_quota_counters AS c (key, window_minute, count) VALUES (p_school, p_window, 1)
            ON CONFLICT (key, window_minute) DO UPDATE SET count = c.count + 1 WHERE c.count < p_school_limit
            RETURNING c.count INTO taken;
          IF taken IS NULL THEN
            RETURN 'SCHOOL_QUOTA_EXCEEDED';
          END IF;
          taken := NULL;
          INSERT INTO public.tool_call_quota_counters AS c (key, window_minute, count) VALUES (p_user, p_window, 1)
            ON CONFLICT (key, window_minute) DO UPDATE SET count = c.count + 1 WHERE c.count < p_user_limit
            RETURNING c.count INTO taken;
          IF taken IS NULL THEN
            UPDATE public.tool_call_quota_counters SET count = count - 1 WHERE key = p_school AND window_minute = p_window;
            RETURN 'USER_QUOTA_EXCEEDED';
          END IF;
          RETURN NULL;
        END
        $$;
      REVOKE ALL ON FUNCTION take_tool_call_quota(text, text, bigint, integer, integer) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION take_tool_call_quota(text, text, bigint, integer, integer) TO ${APP_GROUP_ROLE};

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
      DROP FUNCTION IF EXISTS take_tool_call_quota(text, text, bigint, integer, integer);
      DROP TABLE IF EXISTS tool_call_quota_counters;
    `);
  }
}
