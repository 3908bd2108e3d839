import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the Activity page needs from an audit row, written in the same insert as the row itself:
 * - `tool` (the agent tool's name) or `route` ("POST /departments"): what made the change, by the name people know;
 * - `run_id`: the agent run a tool write came from (null for REST);
 * - `resource_name`: the resource's display name at write time, so a deleted department still reads by name;
 * - `changes`: the validated arguments or body, bounded and without secrets (audit-changes.ts), as jsonb.
 *
 * audit_resource_name() reads the display name of a resource by its audit type and id. SECURITY INVOKER (the default):
 * it runs under the caller's row-level security, so it can only name a row the writer may already see. plpgsql rather
 * than SQL so the uuid cast is never attempted on an id that is not one (a SQL CASE may be constant-folded).
 *
 * The indexes serve GET /audit-log: every filter is one school's rows in keyset order (created_at DESC, id DESC), so
 * each leads with school_id, then the filtered column, then the order; the date range rides on the first one, which
 * replaces ix_audit_log_school_created (same leading columns, plus id for a stable cursor).
 */
export class AuditActivity1764662400015 implements MigrationInterface {
  name = 'AuditActivity1764662400015';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE audit_log
        ADD COLUMN tool text,
        ADD COLUMN route text,
        ADD COLUMN run_id uuid,
        ADD COLUMN resource_name text,
        ADD COLUMN changes jsonb;

      CREATE FUNCTION audit_resource_name(p_type text, p_id text) RETURNS text
        LANGUAGE plpgsql STABLE AS $$
      DECLARE
        v_id uuid;
        v_name text;
      BEGIN
        IF p_id IS NULL OR p_id !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN RETURN NULL; END IF;
        v_id := p_id::uuid;
        CASE p_type
          WHEN 'department' THEN SELECT name INTO v_name FROM departments WHERE id = v_id;
          WHEN 'lesson_plan' THEN SELECT title INTO v_name FROM lesson_plans WHERE id = v_id;
          WHEN 'attendance' THEN SELECT name INTO v_name FROM classes WHERE id = v_id;
          WHEN 'teaching_assignment', 'marks' THEN
            SELECT s.name || ', ' || c.name INTO v_name
              FROM teaching_assignments t JOIN subjects s ON s.id = t.subject_id JOIN classes c ON c.id = t.class_id
             WHERE t.id = v_id;
          WHEN 'branding', 'model_policy' THEN SELECT name INTO v_name FROM schools WHERE id = v_id;
          ELSE v_name := NULL;
        END CASE;
        RETURN v_name;
      END $$;

      DROP INDEX ix_audit_log_school_created;
      CREATE INDEX ix_audit_log_school_keyset ON audit_log (school_id, created_at DESC, id DESC);
      CREATE INDEX ix_audit_log_school_actor ON audit_log (school_id, actor_id, created_at DESC, id DESC);
      CREATE INDEX ix_audit_log_school_source ON audit_log (school_id, source, created_at DESC, id DESC);
      CREATE INDEX ix_audit_log_school_tool ON audit_log (school_id, tool, created_at DESC, id DESC) WHERE tool IS NOT NULL;
      CREATE INDEX ix_audit_log_school_route ON audit_log (school_id, route, created_at DESC, id DESC) WHERE route IS NOT NULL;
      CREATE INDEX ix_audit_log_school_call ON audit_log (school_id, call_id) WHERE call_id IS NOT NULL;
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP INDEX IF EXISTS ix_audit_log_school_keyset, ix_audit_log_school_actor, ix_audit_log_school_source,
        ix_audit_log_school_tool, ix_audit_log_school_route, ix_audit_log_school_call;
      CREATE INDEX ix_audit_log_school_created ON audit_log (school_id, created_at DESC);
      DROP FUNCTION IF EXISTS audit_resource_name(text, text);
      ALTER TABLE audit_log DROP COLUMN tool, DROP COLUMN route, DROP COLUMN run_id, DROP COLUMN resource_name, DROP COLUMN changes;
    `);
  }
}
