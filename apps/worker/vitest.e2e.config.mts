import { defineConfig } from 'vitest/config';

// Both services as processes: the built server (apps/server/dist) on its own database and queues, and
// the worker's proxy and AgentToolService in this process, talking over the real RabbitMQ.
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'worker-e2e',
    watch: false,
    environment: 'node',
    include: ['test/**/*.e2e-spec.ts'],
    testTimeout: 60_000,
    hookTimeout: 90_000,
    pool: 'forks',
  },
});
