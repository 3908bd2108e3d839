import { defineConfig } from 'vitest/config';

/**
 * Failover against a three-node RabbitMQ cluster started by the test (tools/cluster/rmq-cluster.sh, AMQP on 5681-5683
 * unless RMQ_CLUSTER_PORT_BASE says otherwise). Slow (the boot alone takes 20-80 s), so not part of `npm test`:
 * `npx vitest run -c libs/rmq/vitest.cluster.config.mts`.
 */
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'rmq-cluster',
    watch: false,
    environment: 'node',
    include: ['src/**/*.cluster-spec.ts'],
    fileParallelism: false,
    testTimeout: 90_000,
    hookTimeout: 240_000,
  },
});
