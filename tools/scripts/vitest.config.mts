import { defineConfig } from 'vitest/config';

// `npm run chat` in a pseudo-terminal (util-linux `script`), against the built server and worker started as processes
// on a database and queues of their own. Needs `nx run-many -t build` first (npm test builds before it runs).
export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'chat-pty',
    watch: false,
    environment: 'node',
    include: ['test/**/*.pty-spec.mjs', 'test/**/*.spec.mjs'],
    testTimeout: 90_000,
    hookTimeout: 150_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
