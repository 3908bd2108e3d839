import { defineConfig } from 'vitest/config';

/** Every project's unit and integration suites in one run; `npm test` reads its JSON report for the totals. */
export default defineConfig({
  test: {
    projects: [
      'libs/*/vitest.config.mts',
      'libs/*/vitest.integration.config.mts',
      'apps/*/vitest.config.mts',
      'apps/*/vitest.integration.config.mts',
      'apps/*/vitest.e2e.config.mts',
      'tools/*/vitest.config.mts',
    ],
  },
});
