import baseConfig, { appTestsUseTheTestStack } from '../../eslint.config.mjs';

// No @nx/dependency-checks here: an app uses several dependencies only at run time (amqplib, amqp-connection-manager).
export default [...baseConfig, appTestsUseTheTestStack];
