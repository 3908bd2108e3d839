import pg from 'pg';
import { APP_GROUP_ROLE } from './database-roles.js';
import { createOwnerDataSource } from './data-source.js';

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (value: string) => `'${value.replaceAll("'", "''")}'`;

const withDatabase = (url: string, database: string) => {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
};

const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/**
 * Idempotent: creates the app roles and the database if missing, then runs pending migrations as the owner.
 * Roles are cluster-wide, so existing ones are altered, never dropped.
 */
export const setupDatabase = async ({ ownerUrl, appUrl }: { ownerUrl: string; appUrl: string }): Promise<void> => {
  const maintenance = new pg.Client({ connectionString: withDatabase(ownerUrl, 'postgres') });
  await maintenance.connect();
  try {
    const app = new URL(appUrl);
    const appRole = decodeURIComponent(app.username);
    const appPassword = decodeURIComponent(app.password);
    const target = databaseName(ownerUrl);
    if (databaseName(appUrl) !== target) throw new Error('DATABASE_URL and DATABASE_OWNER_URL must name the same database.');

    // Serialise concurrent setups (parallel test runs) on role creation.
    await maintenance.query(`SELECT pg_advisory_lock(hashtext('naalya-setup-roles'))`);
    try {
      const { rowCount: groupExists } = await maintenance.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [APP_GROUP_ROLE]);
      if (!groupExists) await maintenance.query(`CREATE ROLE ${quoteIdentifier(APP_GROUP_ROLE)} NOLOGIN`);
      const { rowCount: appExists } = await maintenance.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [appRole]);
      const attributes = `LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD ${quoteLiteral(appPassword)}`;
      await maintenance.query(`${appExists ? 'ALTER' : 'CREATE'} ROLE ${quoteIdentifier(appRole)} ${attributes}`);
      await maintenance.query(`GRANT ${quoteIdentifier(APP_GROUP_ROLE)} TO ${quoteIdentifier(appRole)}`);
    } finally {
      await maintenance.query(`SELECT pg_advisory_unlock(hashtext('naalya-setup-roles'))`);
    }
    const { rowCount: databaseExists } = await maintenance.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [target]);
    if (!databaseExists) await maintenance.query(`CREATE DATABASE ${quoteIdentifier(target)}`);
  } finally {
    await maintenance.end();
  }

  const owner = createOwnerDataSource(ownerUrl);
  await owner.initialize();
  try {
    await owner.runMigrations({ transaction: 'all' });
  } finally {
    await owner.destroy();
  }
};
