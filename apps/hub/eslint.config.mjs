import baseConfig, { appTestsUseTheTestStack } from '../../eslint.config.mjs';

export default [...baseConfig, appTestsUseTheTestStack];
