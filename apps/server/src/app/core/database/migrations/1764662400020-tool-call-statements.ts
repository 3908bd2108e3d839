import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';

/**
 * Fewer round trips per tool call, the same checks (issue 25). Every function here is SECURITY INVOKER: it runs with the
 * caller's rights and under row-level security, so it can read nothing the statements it replaces could not.
 *
 * - caller_with_permissions: the caller's row and their roles' permission rows in one read, as IdentityService had it
 *   inline; now the one definition the REST unit of work, run contexts and open_tool_call all use.
 * - open_tool_call: the first statement of a tool call's unit of work. It pins the tenant and the time limits
 *   (transaction-local, exactly the unit of work's own set_config statement), then returns the token's run as
 *   agent_run_dispatch_state sees it (the narrow definer lookup, which keeps its KEY SHARE lock on the run row until the
 *   call's transaction ends) and the caller with their permissions, read under the pin just made. A caller or run that
 *   is missing comes back as NULLs, refused by execute() as before.
 * - claim_tool_call: the ledger claim and lookup. The lookup must see a duplicate that committed while the claim waited
 *   for the advisory lock; a VOLATILE function takes a fresh snapshot for each statement it runs, so the lookup after the
 *   lock sees it, where a lookup in the lock's own statement (one snapshot, taken before the wait) would not.
 */
export class ToolCallStatements1764662400020 implements MigrationInterface {
  name = 'ToolCallStatements1764662400020';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION caller_with_permissions(p_user_id uuid)
        RETURNS TABLE ("isActive" boolean, "userType" text, "schoolId" uuid, "campusId" uuid, permissions json)
        LANGUAGE sql STABLE SECURITY INVOKER
        AS $$
          SELECT u.is_active, u.user_type::text, u.school_id, u.campus_id,
                 (SELECT COALESCE(json_agg(json_build_object('action', p.action, 'resource', p.resource, 'conditions', p.conditions)), '[]'::json)
                    FROM public.role_permissions p INNER JOIN public.user_x_roles ur ON ur.role_id = p.role_id
                   WHERE ur.user_id = u.id)
            FROM public.users u
           WHERE u.id = p_user_id
        $$;

      CREATE FUNCTION open_tool_call(p_school_id text, p_platform text, p_user_id text, p_statement_timeout text,
                                     p_idle_timeout text, p_run_id uuid)
        RETURNS TABLE (run_status text, run_owner_id uuid, run_thread_id uuid, run_epoch integer, run_lease_live boolean,
                       caller_active boolean, caller_type text, caller_school_id uuid, caller_campus_id uuid, caller_permissions json)
        LANGUAGE plpgsql VOLATILE SECURITY INVOKER
        AS $$
        BEGIN
          PERFORM set_config('app.school_id', p_school_id, true), set_config('app.platform', p_platform, true),
                  set_config('app.user_id', p_user_id, true), set_config('statement_timeout', p_statement_timeout, true),
                  set_config('idle_in_transaction_session_timeout', p_idle_timeout, true);
          RETURN QUERY
            SELECT run.status, run.owner_id, run.thread_id, run.epoch, run.lease_live,
                   caller."isActive", caller."userType", caller."schoolId", caller."campusId", caller.permissions
              FROM (SELECT) AS one
              LEFT JOIN public.agent_run_dispatch_state(p_run_id) AS run ON true
              LEFT JOIN public.caller_with_permissions(p_user_id::uuid) AS caller ON true;
        END
        $$;

      CREATE FUNCTION claim_tool_call(p_call_id text, p_wait_ms text)
        RETURNS TABLE (request_hash text, result jsonb)
        LANGUAGE plpgsql VOLATILE SECURITY INVOKER
        AS $$
        BEGIN
          PERFORM set_config('lock_timeout', p_wait_ms, true), pg_advisory_xact_lock(hashtextextended(p_call_id, 0)),
                  set_config('lock_timeout', '0', true);
          RETURN QUERY SELECT l.request_hash, l.result FROM public.tool_call_ledger l WHERE l.call_id = p_call_id;
        END
        $$;

      REVOKE ALL ON FUNCTION caller_with_permissions(uuid) FROM PUBLIC;
      REVOKE ALL ON FUNCTION open_tool_call(text, text, text, text, text, uuid) FROM PUBLIC;
      REVOKE ALL ON FUNCTION claim_tool_call(text, text) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION caller_with_permissions(uuid) TO ${APP_GROUP_ROLE};
      GRANT EXECUTE ON FUNCTION open_tool_call(text, text, text, text, text, uuid) TO ${APP_GROUP_ROLE};
      GRANT EXECUTE ON FUNCTION claim_tool_call(text, text) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS claim_tool_call(text, text);
      DROP FUNCTION IF EXISTS open_tool_call(text, text, text, text, text, uuid);
      DROP FUNCTION IF EXISTS caller_with_permissions(uuid);
    `);
  }
}
