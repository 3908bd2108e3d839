import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';
import { ACTOR_SETTING as ACTOR, PLATFORM_SETTING as PLATFORM, tenantRowLevelSecurity } from '../row-level-security.js';

/**
 * The user's answers to confirmations: one row per confirmation answered at resume, bound to the thread, the call
 * id, the tool's event, the sha256 of the call's canonical arguments and the user who answered, with an expiry.
 * execute() runs a tool that needs confirmation only when an approving, unexpired row matches all of them.
 *
 * Rows follow the agent tables (compare CreateAgentRuns): tenant rows for staff, school-less rows for a platform
 * admin reachable only from their own unscoped frame, and every row bound to the user who answered. A platform
 * admin's write runs pinned to a target school, where their school-less row is invisible, so execute() reads the
 * approval through one narrow SECURITY DEFINER lookup by thread and call id (compare agent_run_dispatch_state).
 * Rows are never updated: an approval is spent by the idempotency ledger, which answers a replayed call id from its
 * record and refuses it for any other request.
 */
export class CreateToolCallApprovals1764662400004 implements MigrationInterface {
  name = 'CreateToolCallApprovals1764662400004';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE tool_call_approvals (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid REFERENCES schools (id),
        thread_id uuid NOT NULL,
        run_id uuid NOT NULL,
        interrupt_id text NOT NULL,
        call_id text NOT NULL,
        event text NOT NULL,
        args_hash text NOT NULL,
        user_id uuid NOT NULL,
        approved boolean NOT NULL,
        answer text NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        -- One answer per call in a thread: a second approval cannot widen or replace the first.
        CONSTRAINT uq_tool_call_approvals_thread_call UNIQUE (thread_id, call_id),
        CONSTRAINT fk_tool_call_approvals_thread FOREIGN KEY (school_id, thread_id) REFERENCES agent_threads (school_id, id) ON DELETE CASCADE,
        CONSTRAINT fk_tool_call_approvals_run FOREIGN KEY (school_id, run_id) REFERENCES agent_runs (school_id, id) ON DELETE CASCADE,
        CONSTRAINT fk_tool_call_approvals_user FOREIGN KEY (school_id, user_id) REFERENCES users (school_id, id)
      );
      ${tenantRowLevelSecurity('tool_call_approvals')}
      CREATE POLICY tool_call_approvals_platform_owner ON tool_call_approvals
        USING (school_id IS NULL AND ${PLATFORM} AND user_id = ${ACTOR})
        WITH CHECK (school_id IS NULL AND ${PLATFORM} AND user_id = ${ACTOR});
      CREATE POLICY tool_call_approvals_owner ON tool_call_approvals AS RESTRICTIVE TO ${APP_GROUP_ROLE}
        USING (user_id = ${ACTOR} OR ${PLATFORM})
        WITH CHECK (user_id = ${ACTOR});
      GRANT SELECT, INSERT ON tool_call_approvals TO ${APP_GROUP_ROLE};
    `);

    // What execute() needs to decide, and why it refused, for one call id in one thread; nothing else.
    await queryRunner.query(`
      CREATE FUNCTION tool_call_approval(p_thread_id uuid, p_call_id text)
        RETURNS TABLE (event text, args_hash text, user_id uuid, approved boolean, expired boolean)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ SELECT a.event, a.args_hash, a.user_id, a.approved, a.expires_at <= now()
                FROM public.tool_call_approvals a WHERE a.thread_id = p_thread_id AND a.call_id = p_call_id $$;
      REVOKE ALL ON FUNCTION tool_call_approval(uuid, text) FROM PUBLIC;
      CREATE POLICY tool_call_approvals_lookup ON tool_call_approvals FOR SELECT TO CURRENT_USER USING (true);
      GRANT EXECUTE ON FUNCTION tool_call_approval(uuid, text) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS tool_call_approval(uuid, text);
      DROP TABLE IF EXISTS tool_call_approvals;
    `);
  }
}
