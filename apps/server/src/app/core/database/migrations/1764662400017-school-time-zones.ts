import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';

/**
 * Each school's IANA time zone, in which the Hub shows every date. Existing schools are in Uganda ('Africa/Kampala',
 * the default a new school gets too). The name is checked against the runtime's IANA list by the service that sets
 * it (SchoolsService, with a sentence saying what is wrong); the CHECK here only keeps out what can never be a zone
 * name, so a hand-written UPDATE cannot store an empty or absurdly long one. The app role may update the column of
 * the school its frame is pinned to only (the schools_tenant policy), as with the model policy's columns.
 *
 * audit_resource_name() learns the `school` audit type (a change to the school's own settings), named by the school.
 */
export class SchoolTimeZones1764662400017 implements MigrationInterface {
  name = 'SchoolTimeZones1764662400017';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE schools ADD COLUMN time_zone text NOT NULL DEFAULT 'Africa/Kampala'
        CONSTRAINT ck_schools_time_zone CHECK (time_zone ~ '^[A-Za-z][A-Za-z0-9_+/-]{0,63}$');
      GRANT UPDATE (time_zone) ON schools TO ${APP_GROUP_ROLE};
    `);
    await queryRunner.query(auditResourceNameFunction(`'branding', 'model_policy', 'school'`));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(auditResourceNameFunction(`'branding', 'model_policy'`));
    await queryRunner.query(`REVOKE UPDATE (time_zone) ON schools FROM ${APP_GROUP_ROLE}; ALTER TABLE schools DROP COLUMN time_zone`);
  }
}

/** The function as migration 1764662400015 wrote it, with the audit types a school's own name stands for. */
const auditResourceNameFunction = (schoolTypes: string) => `
  CREATE OR REPLACE FUNCTION audit_resource_name(p_type text, p_id text) RETURNS text
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
      WHEN ${schoolTypes} THEN SELECT name INTO v_name FROM schools WHERE id = v_id;
      ELSE v_name := NULL;
    END CASE;
    RETURN v_name;
  END $$;
`;
