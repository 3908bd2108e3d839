/** Where /metrics listens; `port` 0 takes a free port (tests), which the server logs. */
export type MetricsConfig = { host: string; port: number };

/** A setting that cannot be used, with the variable it came from, for the process to print before it exits. */
export class ObservabilityConfigError extends Error {
  override readonly name = 'ObservabilityConfigError';
  constructor(
    readonly variable: string,
    reason: string,
  ) {
    super(`${variable} ${reason}`);
  }
}

/**
 * METRICS_PORT and METRICS_HOST. Unset or empty METRICS_PORT: no /metrics at all (each process started by a test would
 * otherwise fight for one port); 0: a free port. `reservedPorts` are the public ports of the same process (the API):
 * /metrics is for the monitoring network only and must never be served beside the public API.
 */
export const loadMetricsConfig = (env: Record<string, string | undefined>, reservedPorts: Record<string, number> = {}): MetricsConfig | undefined => {
  const rawPort = env['METRICS_PORT']?.trim() ?? '';
  if (rawPort === '') return undefined;
  if (!/^\d+$/.test(rawPort) || Number(rawPort) > 65_535) {
    throw new ObservabilityConfigError('METRICS_PORT', `must be a port number (0 to 65535), or empty for no /metrics (got "${rawPort}")`);
  }
  const port = Number(rawPort);
  for (const [variable, reserved] of Object.entries(reservedPorts)) {
    if (port !== 0 && port === reserved) {
      throw new ObservabilityConfigError('METRICS_PORT', `must differ from ${variable} (${reserved}): /metrics is never served on the public API port`);
    }
  }
  const host = env['METRICS_HOST']?.trim() || '127.0.0.1';
  if (/\s|\//.test(host)) throw new ObservabilityConfigError('METRICS_HOST', `must be a host name or address to listen on (got "${host}")`);
  return { host, port };
};

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/**
 * LOG_FORMAT: json (one object a line, for a log pipeline) or pretty (a line a person reads). Unset: json when
 * NODE_ENV=production, where logs go to a collector, else pretty.
 */
export const loadLogFormat = (env: Record<string, string | undefined>): LogFormat => {
  const value = env['LOG_FORMAT']?.trim() ?? '';
  if (value === '') return env['NODE_ENV'] === 'production' ? 'json' : 'pretty';
  if ((LOG_FORMATS as readonly string[]).includes(value)) return value as LogFormat;
  throw new ObservabilityConfigError('LOG_FORMAT', `must be one of ${LOG_FORMATS.join(', ')} (got "${value}")`);
};
