import { deleteTopology, rmqNames } from '@naalya/rmq';
import type { TestProject } from 'vitest/node';
// eslint-disable-next-line @nx/enforce-module-boundaries -- bench/ is a folder of scripts, not an Nx project (see stack.ts)
import { RABBITMQ_URL, createStack } from '../../../../bench/lib/stack.mjs';

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
  const template = await createStack({ poolSize: 1, prefix: 'naalya_rel_template' });
  // A template with a session open cannot be copied.
  await template.owner.end();
  await deleteTopology(RABBITMQ_URL, rmqNames(template.env.AGENT_TOOLS_QUEUE, template.env.AGENT_RUNS_QUEUE)).catch(() => undefined);
  project.provide('templateDatabase', template.database);
  return () => template.teardown();
}
