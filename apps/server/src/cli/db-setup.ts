import { ConfigError, loadServerConfig } from '../app/core/config/server-config.js';
import { setupDatabase } from '../app/core/database/setup-database.js';

try {
  const config = loadServerConfig();
  await setupDatabase({ ownerUrl: config.DATABASE_OWNER_URL, appUrl: config.DATABASE_URL });
  console.log('Database ready: roles created, migrations applied.');
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : `Database setup failed: ${(error as Error).message}`);
  process.exit(1);
}
