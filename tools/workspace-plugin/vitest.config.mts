import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: import.meta.dirname,
  resolve: { conditions: ['@naalya/source'] },
  ssr: { resolve: { conditions: ['@naalya/source'] } },
  test: {
    name: 'workspace-plugin',
    watch: false,
    environment: 'node',
    include: ['src/**/*.spec.ts'],
    testTimeout: 60_000,
    // No formatter is installed and the generator writes formatted code: skip formatFiles' attempt and its warning.
    env: { NX_SKIP_FORMAT: 'true' },
  },
});
