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

/** The schema the worker's checkpoint role owns: the only thing that role can reach. */
export const CHECKPOINT_SCHEMA = 'agent_checkpoints';

/**
 * The worker's LangGraph checkpoint role (from CHECKPOINT_DATABASE_URL): a login that owns one schema,
 * agent_checkpoints, and is granted nothing else, so it never reaches a domain table. Idempotent.
 */
const setupCheckpointRole = async (ownerUrl: string, appUrl: string, checkpointUrl: string): Promise<void> => {
  const checkpoint = new URL(checkpointUrl);
  const role = decodeURIComponent(checkpoint.username);
  const reserved = [new URL(ownerUrl).username, new URL(appUrl).username, APP_GROUP_ROLE].map(decodeURIComponent);
  if (!role || reserved.includes(role)) throw new Error('CHECKPOINT_DATABASE_URL must name a role of its own, not the owner or the app role.');
  const maintenance = new pg.Client({ connectionString: withDatabase(ownerUrl, 'postgres') });
  await maintenance.connect();
  try {
    await maintenance.query(`SELECT pg_advisory_lock(hashtext('naalya-setup-roles'))`);
    try {
      const { rowCount: exists } = await maintenance.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [role]);
      const attributes = `LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD ${quoteLiteral(decodeURIComponent(checkpoint.password))}`;
      await maintenance.query(`${exists ? 'ALTER' : 'CREATE'} ROLE ${quoteIdentifier(role)} ${attributes}`);
    } finally {
      await maintenance.query(`SELECT pg_advisory_unlock(hashtext('naalya-setup-roles'))`);
    }
    const database = databaseName(checkpointUrl);
    const { rowCount: databaseExists } = await maintenance.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [database]);
    if (!databaseExists) await maintenance.query(`CREATE DATABASE ${quoteIdentifier(database)}`);
  } finally {
    await maintenance.end();
  }
  const owner = new pg.Client({ connectionString: withDatabase(ownerUrl, databaseName(checkpointUrl)) });
  await owner.connect();
  try {
    await owner.query(`CREATE SCHEMA IF NOT EXISTS ${CHECKPOINT_SCHEMA} AUTHORIZATION ${quoteIdentifier(role)}`);
    await owner.query(`ALTER SCHEMA ${CHECKPOINT_SCHEMA} OWNER TO ${quoteIdentifier(role)}`);
    await owner.query(`REVOKE ALL ON SCHEMA ${CHECKPOINT_SCHEMA} FROM PUBLIC`);
    await owner.query(`ALTER ROLE ${quoteIdentifier(role)} IN DATABASE ${quoteIdentifier(databaseName(checkpointUrl))} SET search_path = ${CHECKPOINT_SCHEMA}`);
  } finally {
    await owner.end();
  }
};

/**
 * Idempotent: creates the app roles and the database if missing, then runs pending migrations as the owner.
 * Roles are cluster-wide, so existing ones are altered, never dropped. With `checkpointUrl`, also the
 * worker's checkpoint role and its schema (the server itself never holds that URL).
 */
export const setupDatabase = async ({ ownerUrl, appUrl, checkpointUrl }: { ownerUrl: string; appUrl: string; checkpointUrl?: string }): Promise<void> => {
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
  if (checkpointUrl) await setupCheckpointRole(ownerUrl, appUrl, checkpointUrl);
};
