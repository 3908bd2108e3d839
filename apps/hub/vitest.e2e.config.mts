import { defineConfig } from 'vitest/config';

// The built Hub in Debian's chromium (playwright-core), against the built server and worker started as processes on a
// database and queues of their own. Needs `nx run-many -t build` first (npm test builds before it runs).
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'hub-browser',
    watch: false,
    environment: 'node',
    include: ['test/**/*.browser-spec.ts'],
    testTimeout: 60_000,
    // A run's state reaches the page through the server (a queued run is looked at again every second): more than
    // expect.poll's default second on a loaded machine.
    expect: { poll: { timeout: 20_000 } },
    hookTimeout: 150_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
