import { startTracing } from '@naalya/telemetry';

// Imported first by main.ts: the http and pg instrumentations patch modules as they are required, so this must run
// before Nest, express and typeorm load. Does nothing unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
startTracing('naalya-server');
