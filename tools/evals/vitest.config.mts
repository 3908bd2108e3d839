import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: { name: 'evals', watch: false, environment: 'node', include: ['src/**/*.spec.ts'], testTimeout: 20_000 },
});
