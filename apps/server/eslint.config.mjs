import baseConfig, { appTestsUseTheTestStack } from '../../eslint.config.mjs';
import { floorsPlugin } from './floors.mjs';

export default [
  ...baseConfig,
  // Its PgBouncer and TLS tests start their throwaway services with the test stack's helpers.
  appTestsUseTheTestStack,
  // Inside the app, imports run down its floors (docs/architecture.md); `node apps/server/floors.mjs` lists them.
  { files: ['src/**/*.ts'], plugins: { floors: floorsPlugin }, rules: { 'floors/no-upward-import': 'error' } },
];
