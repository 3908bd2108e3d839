import { createTestStack } from '@naalya/test-stack';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The seeded database every phase's own database is copied from. */
    templateDatabase: string;
  }
}

/**
 * Sets up and seeds one database with the server's CLIs, once per run: each phase then gets its own copy of it in a
 * second instead of running the setup again (about half a minute per phase on a busy 2-core machine).
 */
export default async function setup(project: TestProject) {
  const template = await createTestStack({ name: 'rel_template', poolSize: 1, broker: false });
  // A template with a session open cannot be copied.
  await template.owner.end();
  project.provide('templateDatabase', template.database);
  return () => template.teardown();
}
