import { ConfigError, loadServerConfig, requireOwnerUrl } from '../app/core/config/server-config.js';
import { DEMO_PASSWORD } from '../app/seed/demo-seed.js';
import { seedDatabase } from '../app/seed/seed-database.js';

try {
  const config = loadServerConfig();
  const demo = await seedDatabase(requireOwnerUrl(config, 'db:seed'), { reset: process.argv.includes('--reset') });
  console.log(`Seeded ${demo.schools.map((school) => school.name).join(' and ')}. Every demo user's password is "${DEMO_PASSWORD}".`);
  for (const school of demo.schools) {
    for (const persona of Object.values(school.personas)) console.log(`  ${persona.email.padEnd(34)} ${persona.key}${persona.isActive ? '' : ' (deactivated)'}`);
  }
  console.log(`  ${demo.platformAdmin.email.padEnd(34)} platformAdmin`);
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : `Seeding failed: ${(error as Error).message}`);
  process.exit(1);
}
