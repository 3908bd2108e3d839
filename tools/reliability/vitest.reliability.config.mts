import { defineConfig } from 'vitest/config';

// Not vitest.config.mts on purpose: the root projects glob (and so `npm test`) must not pick the battery up. It runs the
// built server and worker as processes and breaks their broker and database through fault proxies, so its phases run
// one file at a time: two phases breaking things at once would blame each other's faults.
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'reliability',
    watch: false,
    environment: 'node',
    include: ['src/**/*.reliability-spec.ts'],
    globalSetup: ['src/support/global-setup.ts'],
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
