import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';
import { PLATFORM_SETTING as PLATFORM, TENANT_SETTING as TENANT, tenantRowLevelSecurity } from '../row-level-security.js';

/** Tenant tables: each gets ENABLE + FORCE row-level security with one tenant policy and a platform read policy. */
const TENANT_TABLES = [
  'campuses',
  'users',
  'roles',
  'role_permissions',
  'user_x_roles',
  'departments',
  'department_members',
  'audit_log',
  'tool_call_ledger',
] as const;


export class CreateTenancySchema1764662400000 implements MigrationInterface {
  name = 'CreateTenancySchema1764662400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE schools (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE campuses (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        name text NOT NULL,
        CONSTRAINT uq_campuses_school_id_id UNIQUE (school_id, id),
        CONSTRAINT uq_campuses_school_name UNIQUE (school_id, name)
      );
      CREATE TABLE users (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid REFERENCES schools (id),
        campus_id uuid,
        email text NOT NULL,
        full_name text NOT NULL,
        user_type text NOT NULL CHECK (user_type IN ('staff', 'platform_admin')),
        is_active boolean NOT NULL DEFAULT true,
        password_hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT uq_users_email UNIQUE (email),
        CONSTRAINT uq_users_school_id_id UNIQUE (school_id, id),
        CONSTRAINT ck_users_platform_admin_has_no_school CHECK ((user_type = 'platform_admin') = (school_id IS NULL)),
        CONSTRAINT fk_users_campus FOREIGN KEY (school_id, campus_id) REFERENCES campuses (school_id, id)
      );
      CREATE TABLE roles (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        name text NOT NULL,
        CONSTRAINT uq_roles_school_id_id UNIQUE (school_id, id),
        CONSTRAINT uq_roles_school_name UNIQUE (school_id, name)
      );
      CREATE TABLE role_permissions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        role_id uuid NOT NULL,
        action text NOT NULL,
        resource text NOT NULL,
        conditions jsonb,
        CONSTRAINT fk_role_permissions_role FOREIGN KEY (school_id, role_id) REFERENCES roles (school_id, id) ON DELETE CASCADE
      );
      CREATE TABLE user_x_roles (
        user_id uuid NOT NULL,
        role_id uuid NOT NULL,
        school_id uuid NOT NULL REFERENCES schools (id),
        PRIMARY KEY (user_id, role_id),
        CONSTRAINT fk_user_x_roles_user FOREIGN KEY (school_id, user_id) REFERENCES users (school_id, id) ON DELETE CASCADE,
        CONSTRAINT fk_user_x_roles_role FOREIGN KEY (school_id, role_id) REFERENCES roles (school_id, id) ON DELETE CASCADE
      );
      CREATE TABLE departments (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        campus_id uuid,
        name text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT uq_departments_school_id_id UNIQUE (school_id, id),
        CONSTRAINT fk_departments_campus FOREIGN KEY (school_id, campus_id) REFERENCES campuses (school_id, id)
      );
      -- One name per campus (or per school for school-wide departments), whatever the case.
      CREATE UNIQUE INDEX uq_departments_campus_name
        ON departments (school_id, COALESCE(campus_id, '00000000-0000-0000-0000-000000000000'::uuid), lower(name));
      CREATE TABLE department_members (
        department_id uuid NOT NULL,
        user_id uuid NOT NULL,
        school_id uuid NOT NULL REFERENCES schools (id),
        is_head boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (department_id, user_id),
        CONSTRAINT fk_department_members_department FOREIGN KEY (school_id, department_id) REFERENCES departments (school_id, id) ON DELETE CASCADE,
        CONSTRAINT fk_department_members_user FOREIGN KEY (school_id, user_id) REFERENCES users (school_id, id)
      );
      CREATE UNIQUE INDEX uq_department_members_one_head ON department_members (department_id) WHERE is_head;
      -- actor_id has no foreign key on purpose: audit rows outlive users, and platform admins have no school.
      CREATE TABLE audit_log (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        actor_id uuid NOT NULL,
        actor_type text NOT NULL,
        action text NOT NULL,
        resource_type text NOT NULL,
        resource_id text,
        source text NOT NULL CHECK (source IN ('http', 'agent')),
        call_id text,
        created_at timestamptz NOT NULL DEFAULT clock_timestamp()
      );
      CREATE INDEX ix_audit_log_school_created ON audit_log (school_id, created_at DESC);
      CREATE TABLE tool_call_ledger (
        call_id text PRIMARY KEY,
        school_id uuid NOT NULL REFERENCES schools (id),
        event text NOT NULL,
        request_hash text NOT NULL,
        actor_id uuid NOT NULL,
        result jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
    `);

    await queryRunner.query(`
      ALTER TABLE schools ENABLE ROW LEVEL SECURITY;
      ALTER TABLE schools FORCE ROW LEVEL SECURITY;
      CREATE POLICY schools_tenant ON schools USING (id = ${TENANT}) WITH CHECK (id = ${TENANT});
      CREATE POLICY schools_platform_read ON schools FOR SELECT USING (${PLATFORM});
    `);
    for (const table of TENANT_TABLES) await queryRunner.query(tenantRowLevelSecurity(table));
    // Every frame may read its own actor's row, so a platform admin writing in a target school is still reloaded fresh.
    await queryRunner.query(`
      CREATE POLICY users_self_read ON users FOR SELECT
        USING (id = NULLIF(current_setting('app.user_id', true), '')::uuid);
    `);

    // Login happens before any tenant is known: one narrow lookup, owned by the owner, returns one user by email.
    await queryRunner.query(`
      CREATE FUNCTION auth_lookup(p_email text)
        RETURNS TABLE (id uuid, school_id uuid, campus_id uuid, user_type text, is_active boolean, password_hash text)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ SELECT u.id, u.school_id, u.campus_id, u.user_type, u.is_active, u.password_hash
              FROM public.users u WHERE u.email = lower(p_email) LIMIT 1 $$;
      REVOKE ALL ON FUNCTION auth_lookup(text) FROM PUBLIC;
    `);
    await queryRunner.query(`
      CREATE POLICY users_auth_lookup ON users FOR SELECT TO CURRENT_USER USING (true);
    `);

    await queryRunner.query(`
      GRANT USAGE ON SCHEMA public TO ${APP_GROUP_ROLE};
      GRANT SELECT ON schools TO ${APP_GROUP_ROLE};
      GRANT SELECT, INSERT, UPDATE, DELETE ON campuses, users, roles, role_permissions, user_x_roles,
        departments, department_members TO ${APP_GROUP_ROLE};
      GRANT SELECT, INSERT ON audit_log, tool_call_ledger TO ${APP_GROUP_ROLE};
      GRANT EXECUTE ON FUNCTION auth_lookup(text) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION IF EXISTS auth_lookup(text);
      DROP TABLE IF EXISTS tool_call_ledger, audit_log, department_members, departments, user_x_roles,
        role_permissions, roles, users, campuses, schools CASCADE;
    `);
  }
}
