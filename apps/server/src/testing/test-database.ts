import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { TEST_APP_ROLE, urlFor, withOwnerClient } from './test-postgres.js';

export type TestDatabase = { name: string; appUrl: string; ownerUrl: string; drop: () => Promise<void> };

/** A fresh copy of the migrated template, owned by this test file alone. */
export const createTestDatabase = async (): Promise<TestDatabase> => {
  const template = inject('templateDatabase');
  const name = `${template}_${randomBytes(4).toString('hex')}`;
  await withOwnerClient(async (client) => {
    // Cloning takes a lock on the template; clones from parallel files retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        return;
      } catch (error) {
        if (attempt >= 20 || !String((error as Error).message).includes('being accessed')) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
      }
    }
  });
  return {
    name,
    appUrl: urlFor(name, TEST_APP_ROLE),
    ownerUrl: urlFor(name),
    drop: () => withOwnerClient(async (client) => void (await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`))),
  };
};
