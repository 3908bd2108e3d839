import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';

/**
 * Reads no longer fence a cancel. A tool call's run lookup took a KEY SHARE lock on the run's row so that a cancel (FOR
 * UPDATE) waits for the call: a write commits before the cancel answers and is listed, or finds the run cancelled and
 * commits nothing. A read commits nothing either way, so the lock bought it nothing, and it cost every read a
 * transaction id, a WAL record for the lock, a commit record to flush, and a MultiXact whenever calls of one run
 * overlapped (measured with pgbench at 8 clients on the bench's read: 1573 transactions/s fenced, 2171 unfenced).
 *
 * - agent_run_read_state: the run's status, owner, thread, epoch and lease as agent_run_dispatch_state answers them,
 *   without the lock. SECURITY DEFINER for the same reason (a platform admin's school-less run is invisible to a call
 *   pinned to a target school), and narrower: only a run of the pinned user (app.user_id), so it reads no other user's
 *   run and hence no other school's. execute() refuses a run that is not the caller's anyway, so a read is refused
 *   exactly where it was: a run of someone else is now no run at all.
 * - open_tool_call takes p_fence: true for a write (agent_run_dispatch_state, the lock held until the call commits),
 *   false for a read or a preview (agent_run_read_state). Everything else it does is unchanged (migration 020).
 */
/** open_tool_call's signature before (migration 020) and after this migration, and what it returns (unchanged). */
const PARAMS = 'p_school_id text, p_platform text, p_user_id text, p_statement_timeout text, p_idle_timeout text, p_run_id uuid';
const RETURNS = `RETURNS TABLE (run_status text, run_owner_id uuid, run_thread_id uuid, run_epoch integer, run_lease_live boolean,
                 caller_active boolean, caller_type text, caller_school_id uuid, caller_campus_id uuid, caller_permissions json)`;

/** The pin and the time limits, transaction-local, as the unit of work's own set_config statement sets them. */
const PIN = `PERFORM set_config('app.school_id', p_school_id, true), set_config('app.platform', p_platform, true),
                  set_config('app.user_id', p_user_id, true), set_config('statement_timeout', p_statement_timeout, true),
                  set_config('idle_in_transaction_session_timeout', p_idle_timeout, true);`;

/** The token's run as `lookup` answers it, and the caller with their permissions read under the pin just made. */
const runAndCaller = (lookup: 'agent_run_dispatch_state' | 'agent_run_read_state') => `
            SELECT run.status, run.owner_id, run.thread_id, run.epoch, run.lease_live,
                   caller."isActive", caller."userType", caller."schoolId", caller."campusId", caller.permissions
              FROM (SELECT) AS one
              LEFT JOIN public.${lookup}(p_run_id) AS run ON true
              LEFT JOIN public.caller_with_permissions(p_user_id::uuid) AS caller ON true`;

export class UnfencedReads1764662400022 implements MigrationInterface {
  name = 'UnfencedReads1764662400022';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION agent_run_read_state(p_run_id uuid)
        RETURNS TABLE (status text, owner_id uuid, thread_id uuid, epoch integer, lease_live boolean)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          SELECT r.status, r.owner_id, r.thread_id, r.epoch,
                 r.kind = 'direct' OR r.lease_expires_at > now()
            FROM public.agent_runs r
           WHERE r.id = p_run_id AND r.owner_id = NULLIF(current_setting('app.user_id', true), '')::uuid
        $$;
      REVOKE ALL ON FUNCTION agent_run_read_state(uuid) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION agent_run_read_state(uuid) TO ${APP_GROUP_ROLE};

      DROP FUNCTION open_tool_call(text, text, text, text, text, uuid);
      CREATE FUNCTION open_tool_call(${PARAMS}, p_fence boolean)
        ${RETURNS}
        LANGUAGE plpgsql VOLATILE SECURITY INVOKER
        AS $$
        BEGIN
          ${PIN}
          -- Two queries rather than one with a condition: each keeps its own cached plan, and the fenced one alone locks.
          IF p_fence THEN
            RETURN QUERY ${runAndCaller('agent_run_dispatch_state')};
          ELSE
            RETURN QUERY ${runAndCaller('agent_run_read_state')};
          END IF;
        END
        $$;
      REVOKE ALL ON FUNCTION open_tool_call(text, text, text, text, text, uuid, boolean) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION open_tool_call(text, text, text, text, text, uuid, boolean) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS open_tool_call(text, text, text, text, text, uuid, boolean);
      CREATE FUNCTION open_tool_call(${PARAMS})
        ${RETURNS}
        LANGUAGE plpgsql VOLATILE SECURITY INVOKER
        AS $$
        BEGIN
          ${PIN}
          RETURN QUERY ${runAndCaller('agent_run_dispatch_state')};
        END
        $$;
      REVOKE ALL ON FUNCTION open_tool_call(text, text, text, text, text, uuid) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION open_tool_call(text, text, text, text, text, uuid) TO ${APP_GROUP_ROLE};
      DROP FUNCTION IF EXISTS agent_run_read_state(uuid);
    `);
  }
}
