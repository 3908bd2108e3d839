import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';

/**
 * Login attempts counted in PostgreSQL, so that every server replica spends one allowance per account and per client
 * address: counted in each process, N replicas behind a balancer would allow N times the limit.
 *
 * Like the tool-call quota (migration 1764662400009), the counters are platform-level, not tenant data: login runs
 * before any tenant is known. A row is a key (a hash of 'account:<email>' or 'address:<ip>', never the email or address
 * itself), a fixed window and a count. The app role has no privilege on the table, only EXECUTE on three narrow
 * SECURITY DEFINER functions. UNLOGGED: a crash of PostgreSQL forgets the current window, which a brute-force brake
 * tolerates, and no WAL is written per login.
 *
 * take_login_attempt counts one attempt and says whether it was within the limit, in one statement (the row lock is
 * held for that statement only), so concurrent attempts on several replicas never pass the limit. A refused attempt
 * is not counted: the window ends at its fixed time however often a client keeps trying.
 */
export class LoginAttemptCounters1764662400014 implements MigrationInterface {
  name = 'LoginAttemptCounters1764662400014';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE UNLOGGED TABLE login_attempt_counters (
        key text NOT NULL,
        window_start bigint NOT NULL,
        count integer NOT NULL,
        PRIMARY KEY (key, window_start)
      );
      REVOKE ALL ON login_attempt_counters FROM PUBLIC;

      CREATE FUNCTION take_login_attempt(p_key text, p_window bigint, p_limit integer)
        RETURNS boolean
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          INSERT INTO public.login_attempt_counters AS c (key, window_start, count) VALUES (p_key, p_window, 1)
            ON CONFLICT (key, window_start) DO UPDATE SET count = c.count + 1 WHERE c.count < p_limit
            RETURNING true
        $$;
      REVOKE ALL ON FUNCTION take_login_attempt(text, bigint, integer) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION take_login_attempt(text, bigint, integer) TO ${APP_GROUP_ROLE};

      -- A successful login clears its account's count, so a user who mistyped a few times starts afresh.
      CREATE FUNCTION refund_login_attempts(p_key text)
        RETURNS void
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ DELETE FROM public.login_attempt_counters WHERE key = p_key $$;
      REVOKE ALL ON FUNCTION refund_login_attempts(text) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION refund_login_attempts(text) TO ${APP_GROUP_ROLE};

      -- Idempotent: replicas that prune at the same moment delete the same rows once between them.
      CREATE FUNCTION prune_login_attempts(p_before_window bigint)
        RETURNS integer
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          WITH gone AS (DELETE FROM public.login_attempt_counters WHERE window_start < p_before_window RETURNING 1)
          SELECT count(*)::integer FROM gone
        $$;
      REVOKE ALL ON FUNCTION prune_login_attempts(bigint) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION prune_login_attempts(bigint) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS prune_login_attempts(bigint);
      DROP FUNCTION IF EXISTS refund_login_attempts(text);
      DROP FUNCTION IF EXISTS take_login_attempt(text, bigint, integer);
      DROP TABLE IF EXISTS login_attempt_counters;
    `);
  }
}
