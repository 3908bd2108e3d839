import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: { name: 'observability', watch: false, environment: 'node', include: ['src/**/*.spec.ts'] },
});
