import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../testing/test-database.js';
import { TEST_APP_ROLE } from '../../../testing/test-postgres.js';

type Catalog = pg.Client;

const TENANT_EXPRESSION = "NULLIF(current_setting('app.school_id'::text, true), ''::text))::uuid";

/** Every table with a school column has ENABLE + FORCE RLS and a tenant policy with USING and WITH CHECK on the setting. */
const policyViolations = async (catalog: Catalog): Promise<string[]> => {
  const { rows } = await catalog.query<{ table: string; enabled: boolean; forced: boolean; policies: { qual: string | null; check: string | null }[] | null }>(`
    SELECT c.relname AS table, c.relrowsecurity AS enabled, c.relforcerowsecurity AS forced,
           (SELECT json_agg(json_build_object('qual', p.qual, 'check', p.with_check)) FROM pg_policies p
             WHERE p.schemaname = 'public' AND p.tablename = c.relname) AS policies
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind = 'r'
       AND (EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'school_id' AND NOT a.attisdropped)
            OR c.relname = 'schools')`);
  const violations: string[] = [];
  for (const table of rows) {
    if (!table.enabled) violations.push(`${table.table}: row-level security is not enabled`);
    if (!table.forced) violations.push(`${table.table}: row-level security is not forced`);
    const tenantPolicy = (table.policies ?? []).find(
      (policy) => policy.qual?.includes(TENANT_EXPRESSION) && policy.check?.includes(TENANT_EXPRESSION),
    );
    if (!tenantPolicy) violations.push(`${table.table}: no tenant policy with USING and WITH CHECK on app.school_id`);
  }
  return violations;
};

/** Every foreign key onto a tenant table is composite and includes school_id, since FK checks ignore RLS. */
const foreignKeyViolations = async (catalog: Catalog): Promise<string[]> => {
  const { rows } = await catalog.query<{ name: string; source: string; target: string; columns: string[] }>(`
    SELECT con.conname AS name, src.relname AS source, dst.relname AS target,
           array(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY AS k(attnum, position)
                   JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.attnum ORDER BY k.position)::text[] AS columns
      FROM pg_constraint con
      JOIN pg_class src ON src.oid = con.conrelid
      JOIN pg_class dst ON dst.oid = con.confrelid
     WHERE con.contype = 'f'
       AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = dst.oid AND a.attname = 'school_id')`);
  return rows
    .filter((key) => key.columns[0] !== 'school_id' || key.columns.length < 2)
    .map((key) => `${key.name}: ${key.source}(${key.columns.join(', ')}) -> ${key.target} does not lead with school_id`);
};

let database: TestDatabase;
let catalog: Catalog;

beforeAll(async () => {
  database = await createTestDatabase();
  catalog = new pg.Client({ connectionString: database.ownerUrl });
  await catalog.connect();
});
afterAll(async () => {
  await catalog?.end();
  await database?.drop();
});

describe('RLS catalog guard', () => {
  it('every table with a school column has a forced tenant policy', async () => {
    expect(await policyViolations(catalog)).toEqual([]);
  });

  it('every foreign key onto a tenant table is composite with school_id first', async () => {
    expect(await foreignKeyViolations(catalog)).toEqual([]);
  });

  it('catches a deliberately broken policy, an unforced table and a new table without a policy', async () => {
    await catalog.query('BEGIN');
    try {
      await catalog.query(`ALTER TABLE departments NO FORCE ROW LEVEL SECURITY`);
      await catalog.query(`DROP POLICY campuses_tenant ON campuses`);
      await catalog.query(`CREATE POLICY campuses_tenant ON campuses USING (true) WITH CHECK (true)`);
      await catalog.query(`CREATE TABLE notes (id uuid PRIMARY KEY, school_id uuid NOT NULL)`);
      await catalog.query(`ALTER TABLE notes ADD CONSTRAINT fk_notes_campus FOREIGN KEY (id) REFERENCES campuses (id)`);
      expect(await policyViolations(catalog)).toEqual(
        expect.arrayContaining([
          'departments: row-level security is not forced',
          'campuses: no tenant policy with USING and WITH CHECK on app.school_id',
          'notes: row-level security is not enabled',
        ]),
      );
      expect(await foreignKeyViolations(catalog)).toEqual(['fk_notes_campus: notes(id) -> campuses does not lead with school_id']);
    } finally {
      await catalog.query('ROLLBACK');
    }
  });
});

describe('the app role', () => {
  const asApp = async <T>(fn: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: database.appUrl });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  };

  it('is not a superuser, cannot bypass RLS and owns no table', async () => {
    const { rows } = await catalog.query(
      `SELECT rolsuper, rolbypassrls, (SELECT count(*)::int FROM pg_tables WHERE tableowner = $1) AS owned FROM pg_roles WHERE rolname = $1`,
      [TEST_APP_ROLE.name],
    );
    expect(rows).toEqual([{ rolsuper: false, rolbypassrls: false, owned: 0 }]);
  });

  it('sees no rows without a tenant frame', async () => {
    await catalog.query(`INSERT INTO schools (name) VALUES ('Visible To Owner')`);
    expect(await asApp(async (client) => (await client.query(`SELECT count(*)::int AS count FROM schools`)).rows[0].count)).toBe(0);
  });

  it('cannot update or delete audit rows (append-only)', async () => {
    await asApp(async (client) => {
      await expect(client.query(`UPDATE audit_log SET action = 'x'`)).rejects.toThrow(/permission denied/);
      await expect(client.query(`DELETE FROM audit_log`)).rejects.toThrow(/permission denied/);
    });
  });

  it('cannot write into another school even when it names it', async () => {
    const { rows } = await catalog.query<{ id: string }>(`INSERT INTO schools (name) VALUES ('A'), ('B') RETURNING id`);
    await asApp(async (client) => {
      await client.query('BEGIN');
      await client.query(`SELECT set_config('app.school_id', $1, true)`, [rows[0].id]);
      await expect(client.query(`INSERT INTO campuses (school_id, name) VALUES ($1, 'Sneaky')`, [rows[1].id])).rejects.toThrow(
        /row-level security/,
      );
      await client.query('ROLLBACK');
    });
  });

  it('leaves no tenant on a pooled connection after the transaction', async () => {
    await asApp(async (client) => {
      await client.query('BEGIN');
      await client.query(`SELECT set_config('app.school_id', gen_random_uuid()::text, true)`);
      await client.query('COMMIT');
      expect((await client.query(`SELECT current_setting('app.school_id', true) AS value`)).rows[0].value).toBe('');
    });
  });
});
