import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  // Retries in the clients under test wait a second or more (LangChain's backoff), hence the longer timeout.
  test: { name: 'model-simulator', watch: false, environment: 'node', include: ['src/**/*.spec.ts'], testTimeout: 20_000 },
});
