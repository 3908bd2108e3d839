import baseConfig from '../../eslint.config.mjs';

// The browser tests start the built services themselves, so their support may use the database driver and the broker
// client; the Hub's own code stays on the contract only (see the root depConstraints).
const RULE = '@nx/enforce-module-boundaries';
const [level, options] = baseConfig.find((entry) => entry.rules?.[RULE]).rules[RULE];
const FOR_TEST_SUPPORT = ['amqplib', 'pg'];

export default [
  ...baseConfig,
  {
    files: ['test/**/*.ts'],
    rules: {
      [RULE]: [
        level,
        {
          ...options,
          depConstraints: options.depConstraints.map((constraint) =>
            constraint.sourceTag === 'scope:hub'
              ? {
                  ...constraint,
                  bannedExternalImports: constraint.bannedExternalImports.filter((name) => !FOR_TEST_SUPPORT.includes(name)),
                }
              : constraint,
          ),
        },
      ],
    },
  },
];
