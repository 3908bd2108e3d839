import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';

/**
 * Runs the server ends: a run's kind (a worker's conversation step, or a session of direct tool calls), the epoch its
 * dispatch token carries (bumped at every dispatch and by a cancel, so an older token is refused), its lease (the
 * worker holding the step and until when), how often the current step was dispatched, when its questions or its
 * direct session expire, what its current step is (so the sweeper can dispatch it again), and queued runs
 * (multitaskStrategy `enqueue`). The ledger names the run of each write, so a cancel can report what stayed.
 *
 * Three narrow SECURITY DEFINER functions, each answering one question across schools: a tool call's run state
 * (now with its epoch and lease, under a KEY SHARE lock held until the call commits: a cancel, which locks the row FOR
 * UPDATE, waits for it, while lease renewals and stored events, plain updates, do not); the runs the sweeper is due to
 * look at; a run's committed writes.
 */
export class RunLeases1764662400005 implements MigrationInterface {
  name = 'RunLeases1764662400005';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE agent_runs
        ADD COLUMN kind text NOT NULL DEFAULT 'agent' CHECK (kind IN ('agent', 'direct')),
        ADD COLUMN epoch integer NOT NULL DEFAULT 0,
        ADD COLUMN attempts integer NOT NULL DEFAULT 0,
        ADD COLUMN lease_worker text,
        ADD COLUMN lease_expires_at timestamptz,
        ADD COLUMN expires_at timestamptz,
        ADD COLUMN step jsonb,
        ADD COLUMN error_code text;
      ALTER TABLE agent_runs DROP CONSTRAINT agent_runs_status_check;
      ALTER TABLE agent_runs ADD CONSTRAINT ck_agent_runs_status
        CHECK (status IN ('queued', 'running', 'interrupted', 'finished', 'failed', 'cancelled'));
      -- Runs left running by the previous version: direct sessions end now, conversation steps are due for the sweeper.
      UPDATE agent_runs SET kind = 'direct', expires_at = now() WHERE status = 'running' AND message = 'Direct tool calls';
      UPDATE agent_runs SET lease_expires_at = now(), attempts = 1, step = '{"kind":"start"}' WHERE status = 'running' AND kind = 'agent';
      CREATE INDEX ix_agent_runs_running_lease ON agent_runs (lease_expires_at) WHERE status = 'running';
      CREATE INDEX ix_agent_runs_expiring ON agent_runs (expires_at) WHERE status IN ('running', 'interrupted');
      CREATE INDEX ix_agent_runs_queued ON agent_runs (thread_id, created_at) WHERE status = 'queued';
      CREATE INDEX ix_agent_runs_owner_direct ON agent_runs (owner_id) WHERE status = 'running' AND kind = 'direct';

      -- A run the server ends voids the approvals given in it (expires_at moves to now); nothing else about one changes.
      GRANT UPDATE (expires_at) ON tool_call_approvals TO ${APP_GROUP_ROLE};

      ALTER TABLE tool_call_ledger ADD COLUMN run_id uuid;
      CREATE INDEX ix_tool_call_ledger_run ON tool_call_ledger (run_id) WHERE run_id IS NOT NULL;

      -- SELECT ... FOR KEY SHARE needs an UPDATE policy as well as a SELECT one (the owner is subject to RLS here).
      CREATE POLICY agent_runs_lock_lookup ON agent_runs FOR UPDATE TO CURRENT_USER USING (true);
      CREATE POLICY tool_call_ledger_run_lookup ON tool_call_ledger FOR SELECT TO CURRENT_USER USING (true);

      DROP FUNCTION agent_run_dispatch_state(uuid);
      CREATE FUNCTION agent_run_dispatch_state(p_run_id uuid)
        RETURNS TABLE (status text, owner_id uuid, thread_id uuid, epoch integer, lease_live boolean)
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          SELECT r.status, r.owner_id, r.thread_id, r.epoch,
                 r.kind = 'direct' OR r.lease_expires_at > now()
            FROM public.agent_runs r WHERE r.id = p_run_id FOR KEY SHARE
        $$;
      REVOKE ALL ON FUNCTION agent_run_dispatch_state(uuid) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION agent_run_dispatch_state(uuid) TO ${APP_GROUP_ROLE};

      CREATE FUNCTION agent_runs_due(p_limit integer)
        RETURNS TABLE (id uuid, school_id uuid, owner_id uuid, thread_id uuid)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          SELECT r.id, r.school_id, r.owner_id, r.thread_id FROM public.agent_runs r
           WHERE (r.status = 'running' AND r.kind = 'agent' AND r.lease_expires_at < now())
              OR (r.status IN ('running', 'interrupted') AND r.expires_at < now())
              OR (r.status = 'queued' AND NOT EXISTS (
                    SELECT 1 FROM public.agent_runs a WHERE a.thread_id = r.thread_id AND a.status IN ('running', 'interrupted')))
           LIMIT p_limit
        $$;
      REVOKE ALL ON FUNCTION agent_runs_due(integer) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION agent_runs_due(integer) TO ${APP_GROUP_ROLE};

      CREATE FUNCTION agent_run_committed_writes(p_run_id uuid)
        RETURNS TABLE (call_id text, event text, audit_id text)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          SELECT l.call_id, l.event, l.result ->> 'auditId' FROM public.tool_call_ledger l
           WHERE l.run_id = p_run_id AND NOT (l.result ? 'error') ORDER BY l.created_at
        $$;
      REVOKE ALL ON FUNCTION agent_run_committed_writes(uuid) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION agent_run_committed_writes(uuid) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS agent_run_committed_writes(uuid);
      DROP FUNCTION IF EXISTS agent_runs_due(integer);
      DROP FUNCTION IF EXISTS agent_run_dispatch_state(uuid);
      CREATE FUNCTION agent_run_dispatch_state(p_run_id uuid)
        RETURNS TABLE (status text, owner_id uuid, thread_id uuid)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ SELECT r.status, r.owner_id, r.thread_id FROM public.agent_runs r WHERE r.id = p_run_id $$;
      REVOKE ALL ON FUNCTION agent_run_dispatch_state(uuid) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION agent_run_dispatch_state(uuid) TO ${APP_GROUP_ROLE};
      DROP POLICY IF EXISTS tool_call_ledger_run_lookup ON tool_call_ledger;
      REVOKE UPDATE (expires_at) ON tool_call_approvals FROM ${APP_GROUP_ROLE};
      DROP POLICY IF EXISTS agent_runs_lock_lookup ON agent_runs;
      ALTER TABLE tool_call_ledger DROP COLUMN IF EXISTS run_id;
      ALTER TABLE agent_runs DROP CONSTRAINT IF EXISTS ck_agent_runs_status,
        ADD CONSTRAINT agent_runs_status_check CHECK (status IN ('running', 'interrupted', 'finished', 'failed')),
        DROP COLUMN kind, DROP COLUMN epoch, DROP COLUMN attempts, DROP COLUMN lease_worker,
        DROP COLUMN lease_expires_at, DROP COLUMN expires_at, DROP COLUMN step, DROP COLUMN error_code;
    `);
  }
}
