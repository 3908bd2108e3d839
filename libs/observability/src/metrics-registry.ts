import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * One registry per process, never prom-client's global one: a test that builds several apps in one process, or a
 * library that registers on the global registry, then cannot collide with (or leak into) what /metrics serves.
 */
export type MetricsRegistry = {
  readonly registry: Registry;
  counter<L extends string>(name: string, help: string, labelNames?: readonly L[]): Counter<L>;
  gauge<L extends string>(name: string, help: string, labelNames?: readonly L[], collect?: (gauge: Gauge<L>) => void | Promise<void>): Gauge<L>;
  histogram<L extends string>(name: string, help: string, buckets: readonly number[], labelNames?: readonly L[]): Histogram<L>;
};

/** Labels that would make one series per person or per school: unbounded, and personal data in the metrics store. */
const FORBIDDEN_LABELS = /^(user|owner|school|tenant|sub|thread|run|call)(_?id)?$/i;

const PROMETHEUS_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

const checkDefinition = (name: string, labelNames: readonly string[]): void => {
  if (!PROMETHEUS_NAME.test(name)) throw new Error(`Metric name "${name}" is not a valid Prometheus name.`);
  const forbidden = labelNames.find((label) => FORBIDDEN_LABELS.test(label));
  if (forbidden) throw new Error(`Metric "${name}" may not have the label "${forbidden}": no per-user, per-school or per-run series.`);
};

/**
 * The process's registry with Node's default process metrics (CPU, memory, event-loop lag, GC) and the app label, so
 * one Prometheus can scrape the server and the worker and tell them apart even behind one job.
 */
export const createMetricsRegistry = (app: string): MetricsRegistry => {
  const registry = new Registry();
  registry.setDefaultLabels({ app });
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    counter: (name, help, labelNames = []) => {
      // Prometheus practice: a counter's name ends in _total (prom-client does not add it for the text format).
      if (!name.endsWith('_total')) throw new Error(`Counter "${name}" must end in _total.`);
      checkDefinition(name, labelNames);
      return new Counter({ name, help, labelNames: [...labelNames], registers: [registry] });
    },
    gauge: (name, help, labelNames = [], collect) => {
      checkDefinition(name, labelNames);
      return new Gauge({
        name,
        help,
        labelNames: [...labelNames],
        registers: [registry],
        ...(collect ? { collect(this: Gauge) { return collect(this as never); } } : {}),
      });
    },
    histogram: (name, help, buckets, labelNames = []) => {
      // Durations are in seconds (the base unit), and the name says so.
      if (!/_(seconds|bytes|tokens)$/.test(name)) throw new Error(`Histogram "${name}" must name its unit (_seconds, _bytes or _tokens).`);
      checkDefinition(name, labelNames);
      return new Histogram({ name, help, buckets: [...buckets], labelNames: [...labelNames], registers: [registry] });
    },
  };
};

/** Buckets for work measured in milliseconds to tens of seconds (a tool call, a model call, an event's lag). */
export const DURATION_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;

/** Seconds since `startedAt` (from performance.now()), the unit every duration histogram here takes. */
export const secondsSince = (startedAt: number): number => (performance.now() - startedAt) / 1000;
