import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';
import { ACTOR_SETTING as ACTOR, PLATFORM_SETTING as PLATFORM, tenantRowLevelSecurity } from '../row-level-security.js';

const TABLES = ['agent_threads', 'agent_runs', 'agent_run_events'] as const;


/**
 * Agent threads, their runs and the runs' events.
 *
 * Ownership: a thread belongs to the user who opened it, in that user's school. A member of staff's rows are tenant
 * rows (school_id set) under the usual tenant and platform-read policies. A platform admin belongs to no school, so
 * their rows carry no school_id; a third policy lets them reach exactly their own school-less rows, and only from
 * their own unscoped frame (app.platform on, app.user_id theirs). On top of that a restrictive policy binds every
 * row to its owner for the app role: a colleague in the same school sees nothing even through a query that forgets
 * the owner filter. The foreign keys are composite on school_id like every key onto a tenant table; for a platform
 * admin's rows (school_id NULL) PostgreSQL does not check them (MATCH SIMPLE), so the run event ingest copies school
 * and owner from the run row it has locked rather than from the message.
 */
export class CreateAgentRuns1764662400002 implements MigrationInterface {
  name = 'CreateAgentRuns1764662400002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE agent_threads (
        id uuid PRIMARY KEY,
        school_id uuid REFERENCES schools (id),
        owner_id uuid NOT NULL,
        title text CHECK (char_length(title) <= 200),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT uq_agent_threads_school_id_id UNIQUE (school_id, id),
        CONSTRAINT fk_agent_threads_owner FOREIGN KEY (school_id, owner_id) REFERENCES users (school_id, id)
      );
      CREATE INDEX ix_agent_threads_owner_updated ON agent_threads (owner_id, updated_at DESC);

      CREATE TABLE agent_runs (
        id uuid PRIMARY KEY,
        thread_id uuid NOT NULL,
        school_id uuid REFERENCES schools (id),
        owner_id uuid NOT NULL,
        status text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'interrupted', 'finished', 'failed')),
        message text NOT NULL,
        -- What the run was started with, so a resume re-mints the same run mode.
        campus_id uuid,
        target_school_id uuid REFERENCES schools (id),
        -- [{ interruptId, question, askedBy, toolCallId?, argsHash?, answered, answer?, answeredAt?, delivered }]
        pending_interrupts jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(pending_interrupts) = 'array'),
        -- The seq of the run's last event; the ingest numbers the next one under this row's lock.
        last_seq integer NOT NULL DEFAULT 0,
        error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT uq_agent_runs_school_id_id UNIQUE (school_id, id),
        CONSTRAINT fk_agent_runs_thread FOREIGN KEY (school_id, thread_id) REFERENCES agent_threads (school_id, id) ON DELETE CASCADE,
        CONSTRAINT fk_agent_runs_owner FOREIGN KEY (school_id, owner_id) REFERENCES users (school_id, id),
        CONSTRAINT fk_agent_runs_campus FOREIGN KEY (school_id, campus_id) REFERENCES campuses (school_id, id) ON DELETE SET NULL (campus_id)
      );
      -- The per-thread lock: one running or interrupted run per thread; a second start is refused (409).
      CREATE UNIQUE INDEX uq_agent_runs_one_active_per_thread ON agent_runs (thread_id) WHERE status IN ('running', 'interrupted');
      CREATE INDEX ix_agent_runs_thread_created ON agent_runs (thread_id, created_at);

      CREATE TABLE agent_run_events (
        run_id uuid NOT NULL,
        seq integer NOT NULL CHECK (seq > 0),
        school_id uuid REFERENCES schools (id),
        owner_id uuid NOT NULL,
        -- The publisher's AMQP message id: a redelivered or republished event is stored once.
        message_id text NOT NULL,
        type text NOT NULL,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        CONSTRAINT pk_agent_run_events PRIMARY KEY (run_id, seq),
        CONSTRAINT uq_agent_run_events_message UNIQUE (run_id, message_id),
        CONSTRAINT fk_agent_run_events_run FOREIGN KEY (school_id, run_id) REFERENCES agent_runs (school_id, id) ON DELETE CASCADE
      );
    `);

    // Every server instance LISTENs on this channel and wakes the streams it holds; NOTIFY is delivered on commit only.
    await queryRunner.query(`
      CREATE FUNCTION notify_agent_run_event() RETURNS trigger
        LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
        AS $$ BEGIN PERFORM pg_notify('agent_run_events', NEW.run_id::text || ':' || NEW.seq::text); RETURN NULL; END $$;
      CREATE TRIGGER agent_run_events_notify AFTER INSERT ON agent_run_events
        FOR EACH ROW EXECUTE FUNCTION notify_agent_run_event();
    `);

    for (const table of TABLES) {
      await queryRunner.query(`
        ${tenantRowLevelSecurity(table)}
        CREATE POLICY ${table}_platform_owner ON ${table}
          USING (school_id IS NULL AND ${PLATFORM} AND owner_id = ${ACTOR})
          WITH CHECK (school_id IS NULL AND ${PLATFORM} AND owner_id = ${ACTOR});
        CREATE POLICY ${table}_owner ON ${table} AS RESTRICTIVE TO ${APP_GROUP_ROLE}
          USING (owner_id = ${ACTOR} OR ${PLATFORM})
          WITH CHECK (owner_id = ${ACTOR});
      `);
    }

    // Run events arrive with only a run id: one narrow lookup, owned by the owner, names the run's school and owner
    // so the ingest can open that owner's frame (compare auth_lookup).
    await queryRunner.query(`
      CREATE FUNCTION agent_run_tenant(p_run_id uuid)
        RETURNS TABLE (school_id uuid, owner_id uuid)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ SELECT r.school_id, r.owner_id FROM public.agent_runs r WHERE r.id = p_run_id $$;
      REVOKE ALL ON FUNCTION agent_run_tenant(uuid) FROM PUBLIC;
      CREATE POLICY agent_runs_tenant_lookup ON agent_runs FOR SELECT TO CURRENT_USER USING (true);
    `);

    await queryRunner.query(`
      GRANT SELECT, INSERT, UPDATE ON agent_threads, agent_runs TO ${APP_GROUP_ROLE};
      GRANT SELECT, INSERT ON agent_run_events TO ${APP_GROUP_ROLE};
      GRANT EXECUTE ON FUNCTION agent_run_tenant(uuid) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS agent_run_tenant(uuid);
      DROP TABLE IF EXISTS agent_run_events, agent_runs, agent_threads CASCADE;
      DROP FUNCTION IF EXISTS notify_agent_run_event();
    `);
  }
}
