import { createRequire } from 'node:module';
import { setTracingEnabled } from './spans.js';

export type TracingHandle = {
  /** Exports what is buffered, then stops: for tests and an orderly exit. */
  shutdown(): Promise<void>;
  forceFlush(): Promise<void>;
};

const require = createRequire(import.meta.url);

/** Probes that answer every few seconds would each start a trace of their own and bury the runs. */
const UNTRACED_PATHS = new Set(['/health', '/ready', '/metrics']);

/**
 * Starts tracing for this process when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set,
 * exporting OTLP/HTTP (JSON) with the standard OTEL_* variables (OTEL_BSP_SCHEDULE_DELAY, OTEL_TRACES_SAMPLER...).
 * Without one it returns undefined and loads nothing: no provider, no instrumentation, no span.
 *
 * Must run before `http`, `pg` (through typeorm) and the rest are required: the instrumentations patch modules as
 * they load, so each app imports its tracing.ts first. The SDK is required synchronously (createRequire) so that the
 * patching is in place before the next import of main.ts evaluates; a dynamic import() would let them race.
 */
export const startTracing = (serviceName: string, env: NodeJS.ProcessEnv = process.env): TracingHandle | undefined => {
  if (!env['OTEL_EXPORTER_OTLP_ENDPOINT'] && !env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) return undefined;
  const { NodeTracerProvider } = require('@opentelemetry/sdk-trace-node') as typeof import('@opentelemetry/sdk-trace-node');
  const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base') as typeof import('@opentelemetry/sdk-trace-base');
  const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { ATTR_SERVICE_NAME } = require('@opentelemetry/semantic-conventions') as typeof import('@opentelemetry/semantic-conventions');
  const { registerInstrumentations } = require('@opentelemetry/instrumentation') as typeof import('@opentelemetry/instrumentation');
  const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http') as typeof import('@opentelemetry/instrumentation-http');
  const { PgInstrumentation } = require('@opentelemetry/instrumentation-pg') as typeof import('@opentelemetry/instrumentation-pg');

  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: env['OTEL_SERVICE_NAME'] || serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // The AsyncLocalStorage context manager and the W3C trace-context propagator.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (request) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0] ?? '') }),
      // Only SQL inside a traced request or message: the sweeper's and notifier's polling would each be a trace.
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  setTracingEnabled(true);
  return {
    shutdown: async () => {
      setTracingEnabled(false);
      await provider.shutdown();
    },
    forceFlush: () => provider.forceFlush(),
  };
};
