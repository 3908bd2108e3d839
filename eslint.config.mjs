import nx from '@nx/eslint-plugin';

const config = [
  ...nx.configs['flat/base'],
  ...nx.configs['flat/typescript'],
  ...nx.configs['flat/javascript'],
  { ignores: ['**/dist', '**/out-tsc', '**/vitest.config.*.timestamp*', '**/node_modules'] },
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.js', '**/*.jsx', '**/*.mjs', '**/*.mts'],
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: true,
          allow: ['^.*/eslint(\\.base)?\\.config\\.[cm]?[jt]s$'],
          depConstraints: [
            {
              sourceTag: 'type:contract',
              onlyDependOnLibsWithTags: ['type:contract'],
              bannedExternalImports: ['@nestjs/*', 'typeorm', '@casl/*', 'langchain', '@langchain/*', 'amqplib', 'deepagents'],
            },
            { sourceTag: 'type:transport', onlyDependOnLibsWithTags: ['type:contract', 'type:telemetry'], bannedExternalImports: ['typeorm', '@casl/*', 'langchain', '@langchain/*'] },
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
            // Tracing (OpenTelemetry) for the apps and the transport: it knows no project of ours and no framework.
            {
              sourceTag: 'type:telemetry',
              onlyDependOnLibsWithTags: [],
              bannedExternalImports: ['@nestjs/*', 'typeorm', '@casl/*', 'langchain', '@langchain/*', 'amqplib', 'deepagents'],
            },
            // Metrics and logs: both apps import it (scope:shared), the Hub never does; it knows no app, transport or store.
            {
              sourceTag: 'type:observability',
              onlyDependOnLibsWithTags: [],
              bannedExternalImports: ['typeorm', '@casl/*', 'langchain', '@langchain/*', 'amqplib', 'amqp-connection-manager', 'deepagents', 'pg'],
            },
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
            // The reliability battery and the bench drive the built apps as processes through the test stack; in code
            // they may use the shared libs, and an app only through its testing entry point (testingEntriesOfApps).
            { sourceTag: 'scope:reliability', onlyDependOnLibsWithTags: ['scope:reliability', 'scope:shared', 'scope:test-stack'] },
            { sourceTag: 'scope:bench', onlyDependOnLibsWithTags: ['scope:bench', 'scope:shared', 'scope:test-stack'] },
            // The evals drive the built apps like the battery, and play the worker's scripted policy through the simulator.
            { sourceTag: 'scope:evals', onlyDependOnLibsWithTags: ['scope:evals', 'scope:shared', 'scope:test-stack', 'scope:model-simulator'] },
            // The model simulator stands alone: it speaks the providers' wire formats and imports no project of ours.
            { sourceTag: 'scope:model-simulator', onlyDependOnLibsWithTags: ['scope:model-simulator'] },
            // An app's production code depends on no test code (its own tests may: appTestsUseTheTestStack).
            { sourceTag: 'type:app', notDependOnLibsWithTags: ['type:test'] },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
];

export default config;

const BOUNDARIES = '@nx/enforce-module-boundaries';
const [level, options] = config.find((entry) => entry.rules?.[BOUNDARIES]).rules[BOUNDARIES];
const APP_SCOPES = ['scope:server', 'scope:worker', 'scope:hub'];

/** For an app's project config: its tests start the built apps through the test stack, and may talk to the model simulator. */
export const appTestsUseTheTestStack = {
  files: ['**/test/**/*.ts', '**/*.spec.ts', '**/*.integration-spec.ts', '**/*.e2e-spec.ts', '**/*.browser-spec.ts'],
  rules: {
    [BOUNDARIES]: [
      level,
      {
        ...options,
        depConstraints: options.depConstraints
          .filter((constraint) => constraint.sourceTag !== 'type:app')
          .map((constraint) =>
            APP_SCOPES.includes(constraint.sourceTag) ? { ...constraint, onlyDependOnLibsWithTags: [...constraint.onlyDependOnLibsWithTags, 'scope:test-stack', 'scope:model-simulator'] } : constraint,
          ),
      },
    ],
  },
};

/**
 * For the projects that test the built apps from outside (the battery, the bench): the rule forbids importing an app
 * whatever its tags, so its testing entry point, which exports what they drive it with, is allowed by name; its main
 * entry and its `dist/` paths stay forbidden.
 */
export const testingEntriesOfApps = {
  files: ['**/*.ts', '**/*.js', '**/*.mjs', '**/*.mts'],
  rules: { [BOUNDARIES]: [level, { ...options, allow: [...options.allow, '^@naalya/(server|worker)/testing$'] }] },
};
