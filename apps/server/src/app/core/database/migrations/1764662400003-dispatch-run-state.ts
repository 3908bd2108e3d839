import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';

/**
 * A tool call proves its run with a dispatch token; execute() then asks whether that run is still in flight. The
 * call may run in a frame where the run row is invisible (a platform admin's school-less run, read from a write
 * pinned to a target school), so one narrow SECURITY DEFINER lookup answers with the run's status, owner and
 * thread and nothing else (compare agent_run_tenant).
 */
export class DispatchRunState1764662400003 implements MigrationInterface {
  name = 'DispatchRunState1764662400003';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION agent_run_dispatch_state(p_run_id uuid)
        RETURNS TABLE (status text, owner_id uuid, thread_id uuid)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ SELECT r.status, r.owner_id, r.thread_id FROM public.agent_runs r WHERE r.id = p_run_id $$;
      REVOKE ALL ON FUNCTION agent_run_dispatch_state(uuid) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION agent_run_dispatch_state(uuid) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION IF EXISTS agent_run_dispatch_state(uuid);`);
  }
}
