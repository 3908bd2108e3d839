import baseConfig, { testingEntriesOfApps } from '../../eslint.config.mjs';

export default [...baseConfig, testingEntriesOfApps];
