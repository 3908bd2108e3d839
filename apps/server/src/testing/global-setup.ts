import { randomBytes } from 'node:crypto';
import type { TestProject } from 'vitest/node';
import { setupDatabase } from '../app/core/database/setup-database.js';
import { TEST_APP_ROLE, urlFor, withOwnerClient } from './test-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
  }
}

/** Migrates one template database per run; each test file clones it, so files never share rows. */
export default async function setup(project: TestProject) {
  const template = `naalya_test_${process.pid}_${randomBytes(3).toString('hex')}`;
  await setupDatabase({ ownerUrl: urlFor(template), appUrl: urlFor(template, TEST_APP_ROLE) });
  project.provide('templateDatabase', template);
  return async () => {
    await withOwnerClient(async (client) => {
      const { rows } = await client.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [`${template}%`]);
      for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    });
  };
}
