export { DURATION_BUCKETS_SECONDS, createMetricsRegistry, secondsSince, type MetricsRegistry } from './metrics-registry.js';
export { LOG_FORMATS, ObservabilityConfigError, loadLogFormat, loadMetricsConfig, type LogFormat, type MetricsConfig } from './metrics-config.js';
export { MetricsServer } from './metrics-server.js';
export { closeSideServer, listenSideServer } from './side-server.js';
export { addLogContextSource, currentLogContext, withLogContext, type LogContext } from './log-context.js';
export { PinoLoggerService, nestLevelsFrom, prettyLine, writesLevel, type PinoLoggerOptions } from './pino-logger.service.js';
