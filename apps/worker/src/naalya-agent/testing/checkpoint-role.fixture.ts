import type pg from 'pg';

/** The owner of the local cluster, which sets up the checkpoint role and schemas as the database setup would. */
export const CHECKPOINT_OWNER_URL = process.env['TEST_DATABASE_OWNER_URL'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** The test's naalya_checkpoint: a login role that owns only the schemas made for it and has no CREATE on the database. */
export const CHECKPOINT_ROLE = { name: 'naalya_checkpoint_itest', password: 'naalya_checkpoint_itest' };

export const CHECKPOINT_ROLE_URL = (() => {
  const url = new URL(CHECKPOINT_OWNER_URL);
  url.username = CHECKPOINT_ROLE.name;
  url.password = CHECKPOINT_ROLE.password;
  return url.toString();
})();

/**
 * A schema of the suite's own, owned by the checkpoint role, so suites running in parallel never meet (the caller drops
 * it). Suites share the role, so it is created or updated under the same advisory lock as the database setup's roles.
 */
export const createCheckpointSchema = async (admin: pg.Client, schema: string): Promise<void> => {
  await admin.query(`SELECT pg_advisory_lock(hashtext('naalya-setup-roles'))`);
  try {
    const { rowCount } = await admin.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [CHECKPOINT_ROLE.name]);
    await admin.query(
      `${rowCount ? 'ALTER' : 'CREATE'} ROLE ${CHECKPOINT_ROLE.name} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD '${CHECKPOINT_ROLE.password}'`,
    );
  } finally {
    await admin.query(`SELECT pg_advisory_unlock(hashtext('naalya-setup-roles'))`);
  }
  await admin.query(`CREATE SCHEMA "${schema}" AUTHORIZATION ${CHECKPOINT_ROLE.name}`);
};
