import { defineConfig } from 'vitest/config';

// `npm run test:cluster` (tools/scripts/run-cluster.mjs) and nothing else: a three-node RabbitMQ cluster, PgBouncer, two
// servers and two workers as processes, with nodes and a server killed under load; and a TLS-only node for amqps://.
// Not vitest.config.mts, so neither `npm test` nor the battery picks it up; one file, one test at a time.
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'cluster',
    watch: false,
    environment: 'node',
    include: ['src/cluster/**/*.cluster-spec.ts'],
    testTimeout: 150_000,
    // The cluster's boot alone is 23-78 s on two cores, then the database setup and four processes.
    hookTimeout: 200_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
