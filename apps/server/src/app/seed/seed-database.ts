import { createOwnerDataSource } from '../core/database/data-source.js';
import { seedDemo, type DemoData } from './demo-seed.js';

const TABLES = 'tool_call_ledger, audit_log, department_members, departments, user_x_roles, role_permissions, roles, users, campuses, schools';

/**
 * Seeds the demo schools as the owner. With `reset`, demo data replaces whatever is there, which is what a
 * demo run wants; without it an already seeded database is refused rather than doubled.
 */
export const seedDatabase = async (ownerUrl: string, { reset }: { reset: boolean }): Promise<DemoData> => {
  const owner = createOwnerDataSource(ownerUrl);
  await owner.initialize();
  try {
    return await owner.transaction(async (manager) => {
      const [{ count }] = (await manager.query(`SELECT count(*)::int AS count FROM schools`)) as { count: number }[];
      if (count > 0 && !reset) throw new Error('The database already holds schools; pass --reset to replace them with the demo.');
      // audit_log is append-only for the app role; the owner clears it only when replacing the whole demo.
      if (count > 0) await manager.query(`TRUNCATE ${TABLES} CASCADE`);
      return seedDemo(manager);
    });
  } finally {
    await owner.destroy();
  }
};
