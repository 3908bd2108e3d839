import { ConfigError, loadServerConfig, requireOwnerUrl } from '../app/core/config/server-config.js';
import { setupDatabase } from '../app/core/database/setup-database.js';

try {
  const config = loadServerConfig();
  // Optional and read here only: the worker's checkpoint role is created by the setup, never used by the server.
  const checkpointUrl = process.env['CHECKPOINT_DATABASE_URL'] || undefined;
  await setupDatabase({
    ownerUrl: requireOwnerUrl(config, 'db:setup'),
    appUrl: config.DATABASE_URL,
    checkpointUrl,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
  });
  console.log(`Database ready: roles created, migrations applied${checkpointUrl ? ', checkpoint schema ready' : ''}.`);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : `Database setup failed: ${(error as Error).message}`);
  process.exit(1);
}
