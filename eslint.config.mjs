import nx from '@nx/eslint-plugin';

export default [
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
            // The reliability battery drives the built apps as processes; in code it may use only the shared libs.
            { sourceTag: 'scope:reliability', onlyDependOnLibsWithTags: ['scope:reliability', 'scope:shared'] },
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
