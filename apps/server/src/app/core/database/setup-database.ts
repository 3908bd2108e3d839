import pg from 'pg';
import { APP_GROUP_ROLE } from './database-roles.js';
import { createOwnerDataSource } from './data-source.js';
import { DEFAULT_STATEMENT_TIMEOUT_MS, transactionTimeoutsFor } from './transaction-timeouts.js';

const quoteIdentifier = (name: string) => `"${name.replaceAll('"', '""')}"`;
const quoteLiteral = (value: string) => `'${value.replaceAll("'", "''")}'`;

const withDatabase = (url: string, database: string) => {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
};

const databaseName = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1));

/**
 * Runs fn in one transaction holding the setup lock, which serialises concurrent setups (parallel test runs) on
 * cluster-wide role changes. Transaction-scoped, so it is released by COMMIT/ROLLBACK on the very server connection
 * that took it: a session lock's unlock could land on another server connection behind a transaction pooler and
 * leave the lock held by a pooled connection.
 */
const withSetupLock = async (client: pg.Client, fn: () => Promise<void>): Promise<void> => {
  await client.query('BEGIN');
  try {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('naalya-setup-roles'))`);
    await fn();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
};

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
    await withSetupLock(maintenance, async () => {
      const { rowCount: exists } = await maintenance.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [role]);
      const attributes = `LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT PASSWORD ${quoteLiteral(decodeURIComponent(checkpoint.password))}`;
      await maintenance.query(`${exists ? 'ALTER' : 'CREATE'} ROLE ${quoteIdentifier(role)} ${attributes}`);
    });
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
 * Safe through a transaction pooler (its locks are transaction-scoped), though a direct URL is advised for it.
 * Roles are cluster-wide, so existing ones are altered, never dropped. With `checkpointUrl`, also the
 * worker's checkpoint role and its schema (the server itself never holds that URL).
 */
export const setupDatabase = async ({
  ownerUrl,
  appUrl,
  checkpointUrl,
  statementTimeoutMs = DEFAULT_STATEMENT_TIMEOUT_MS,
}: {
  ownerUrl: string;
  appUrl: string;
  checkpointUrl?: string;
  /** DATABASE_STATEMENT_TIMEOUT_MS: becomes the app role's default in the database. */
  statementTimeoutMs?: number;
}): Promise<void> => {
  const maintenance = new pg.Client({ connectionString: withDatabase(ownerUrl, 'postgres') });
  await maintenance.connect();
  try {
    const app = new URL(appUrl);
    const appRole = decodeURIComponent(app.username);
    const appPassword = decodeURIComponent(app.password);
    const target = databaseName(ownerUrl);
    if (databaseName(appUrl) !== target) throw new Error('DATABASE_URL and DATABASE_OWNER_URL must name the same database.');

    await withSetupLock(maintenance, async () => {
      const { rowCount: groupExists } = await maintenance.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [APP_GROUP_ROLE]);
      if (!groupExists) await maintenance.query(`CREATE ROLE ${quoteIdentifier(APP_GROUP_ROLE)} NOLOGIN`);
      const { rowCount: appExists } = await maintenance.query(`SELECT 1 FROM pg_roles WHERE rolname = $1`, [appRole]);
      const attributes = `LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE PASSWORD ${quoteLiteral(appPassword)}`;
      await maintenance.query(`${appExists ? 'ALTER' : 'CREATE'} ROLE ${quoteIdentifier(appRole)} ${attributes}`);
      await maintenance.query(`GRANT ${quoteIdentifier(APP_GROUP_ROLE)} TO ${quoteIdentifier(appRole)}`);
    });
    const { rowCount: databaseExists } = await maintenance.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [target]);
    if (!databaseExists) await maintenance.query(`CREATE DATABASE ${quoteIdentifier(target)}`);
    // The app role's defaults in this database, for the few statements the server runs outside a unit of work (sign-in
    // lookup, sweeper, health check), which set no limits of their own; every unit of work sets its own per
    // transaction (tenant-context). Role settings apply on each new server connection, pooled or not.
    const { statementTimeoutMs: statement, idleInTransactionTimeoutMs: idle } = transactionTimeoutsFor(statementTimeoutMs);
    await withSetupLock(maintenance, async () => {
      for (const [name, ms] of [['statement_timeout', statement], ['idle_in_transaction_session_timeout', idle]] as const) {
        await maintenance.query(`ALTER ROLE ${quoteIdentifier(appRole)} IN DATABASE ${quoteIdentifier(target)} SET ${name} = ${quoteLiteral(`${ms}ms`)}`);
      }
    });
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
