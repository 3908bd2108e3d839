import { defineConfig } from 'vitest/config';

// Real RabbitMQ on 127.0.0.1 (RABBITMQ_TEST_URL overrides it); each suite declares and deletes its own suffixed queues.
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'worker-integration',
    watch: false,
    environment: 'node',
    include: ['src/**/*.integration-spec.ts'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
