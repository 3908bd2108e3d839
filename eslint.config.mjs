import nx from '@nx/eslint-plugin';

const BOUNDARIES = '@nx/enforce-module-boundaries';

const depConstraints = [
  {
    sourceTag: 'type:contract',
    onlyDependOnLibsWithTags: ['type:contract'],
    bannedExternalImports: ['@nestjs/*', 'typeorm', '@casl/*', 'langchain', '@langchain/*', 'amqplib', 'deepagents'],
  },
  { sourceTag: 'type:transport', onlyDependOnLibsWithTags: ['type:contract'], bannedExternalImports: ['typeorm', '@casl/*', 'langchain', '@langchain/*'] },
  {
    sourceTag: 'scope:server',
    onlyDependOnLibsWithTags: ['scope:server', 'scope:shared'],
    bannedExternalImports: ['langchain', '@langchain/*', 'deepagents'],
  },
  {
    sourceTag: 'scope:worker',
    onlyDependOnLibsWithTags: ['scope:worker', 'scope:shared'],
    bannedExternalImports: ['typeorm', '@casl/*', '@nestjs/typeorm'],
  },
  { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
  // The Hub (browser) sees the platform only through the contract: never server, worker or transport code.
  {
    sourceTag: 'scope:hub',
    onlyDependOnLibsWithTags: ['type:contract'],
    bannedExternalImports: ['@nestjs/*', 'typeorm', '@casl/*', 'langchain', '@langchain/*', 'amqplib', 'amqp-connection-manager', 'deepagents', 'pg', 'jsonwebtoken'],
  },
  // Workspace generators may use the shared contract libs, never the apps.
  { sourceTag: 'scope:tooling', onlyDependOnLibsWithTags: ['scope:tooling', 'scope:shared'] },
  // The test stack runs the built apps as processes; in code it uses only the shared libs.
  { sourceTag: 'scope:test-stack', onlyDependOnLibsWithTags: ['scope:test-stack', 'scope:shared'] },
  // The reliability battery and the bench drive the built apps as processes through the test stack; in code they may
  // use the shared libs, and an app only through its testing entry point (testingEntriesOfApps below).
  { sourceTag: 'scope:reliability', onlyDependOnLibsWithTags: ['scope:reliability', 'scope:shared', 'scope:test-stack'] },
  { sourceTag: 'scope:bench', onlyDependOnLibsWithTags: ['scope:bench', 'scope:shared', 'scope:test-stack'] },
  // No production code of an app depends on test code (the apps' own tests may: see below).
  { sourceTag: 'type:app', notDependOnLibsWithTags: ['type:test'] },
];

const moduleBoundaries = (constraints, allow = []) => [
  'error',
  { enforceBuildableLibDependency: true, allow: ['^.*/eslint(\\.base)?\\.config\\.[cm]?[jt]s$', ...allow], depConstraints: constraints },
];

const APP_SCOPES = ['scope:server', 'scope:worker', 'scope:hub'];

// An app's own tests start the built apps through the test stack.
const appTestConstraints = depConstraints
  .filter((constraint) => constraint.sourceTag !== 'type:app')
  .map((constraint) =>
    APP_SCOPES.includes(constraint.sourceTag) ? { ...constraint, onlyDependOnLibsWithTags: [...constraint.onlyDependOnLibsWithTags, 'scope:test-stack'] } : constraint,
  );

/**
 * For the projects that test the built apps from outside (the battery, the bench): an app is never a library
 * (@nx/enforce-module-boundaries forbids importing an app whatever its tags), except its testing entry point, which
 * exports what they drive it with. Allowed by name, so its `dist/` paths and its main entry stay forbidden.
 */
export const testingEntriesOfApps = {
  files: ['**/*.ts', '**/*.js', '**/*.mjs', '**/*.mts'],
  rules: { [BOUNDARIES]: moduleBoundaries(depConstraints, ['^@naalya/(server|worker)/testing$']) },
};

export default [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  ...nx.configs['flat/javascript'],
  { ignores: ['**/dist', '**/out-tsc', '**/vitest.config.*.timestamp*', '**/node_modules'] },
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.js', '**/*.jsx', '**/*.mjs', '**/*.mts'],
    rules: { [BOUNDARIES]: moduleBoundaries(depConstraints) },
  },
  {
    files: ['**/test/**/*.ts', '**/*.spec.ts', '**/*.integration-spec.ts', '**/*.e2e-spec.ts', '**/*.browser-spec.ts'],
    rules: { [BOUNDARIES]: moduleBoundaries(appTestConstraints) },
  },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
];
