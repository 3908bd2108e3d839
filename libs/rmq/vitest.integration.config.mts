import { defineConfig } from 'vitest/config';

/** Against a real RabbitMQ (amqp://guest:guest@127.0.0.1:5672 unless RMQ_URL is set); each file uses its own queues. */
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'rmq-integration',
    watch: false,
    environment: 'node',
    include: ['src/**/*.integration-spec.ts'],
    // Files share one broker and rabbitmqctl; running them one at a time keeps timings, and so the time limits, honest.
    fileParallelism: false,
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
