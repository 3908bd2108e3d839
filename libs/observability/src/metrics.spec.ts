import { describe, expect, it } from 'vitest';
import { createMetricsRegistry, secondsSince } from './metrics-registry.js';
import { MetricsServer } from './metrics-server.js';
import { ObservabilityConfigError, loadLogFormat, loadMetricsConfig } from './metrics-config.js';

describe('createMetricsRegistry', () => {
  it('serves counters, gauges and histograms with the app label beside the process defaults', async () => {
    const metrics = createMetricsRegistry('test-app');
    metrics.counter('naalya_things_total', 'Things.', ['outcome']).inc({ outcome: 'ok' }, 2);
    metrics.gauge('naalya_pool_connections', 'Pool.', ['state'], (gauge) => gauge.set({ state: 'idle' }, 3));
    metrics.histogram('naalya_work_duration_seconds', 'Work.', [0.1, 1]).observe(0.5);
    const text = await metrics.registry.metrics();
    expect(text).toContain('naalya_things_total{outcome="ok",app="test-app"} 2');
    expect(text).toContain('naalya_pool_connections{state="idle",app="test-app"} 3');
    expect(text).toContain('naalya_work_duration_seconds_bucket{le="1",app="test-app"} 1');
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  it('keeps each registry apart: two in one process do not collide', async () => {
    createMetricsRegistry('a').counter('naalya_same_total', 'Same.');
    const b = createMetricsRegistry('b');
    b.counter('naalya_same_total', 'Same.').inc();
    expect(await b.registry.metrics()).toContain('naalya_same_total{app="b"} 1');
  });

  it('refuses a counter without _total, a histogram without its unit and a per-user or per-school label', () => {
    const metrics = createMetricsRegistry('x');
    expect(() => metrics.counter('naalya_things', 'No suffix.')).toThrow(/must end in _total/);
    expect(() => metrics.histogram('naalya_work_duration', 'No unit.', [1])).toThrow(/must name its unit/);
    expect(() => metrics.counter('naalya_calls_total', 'Per user.', ['user_id'])).toThrow(/may not have the label "user_id"/);
    expect(() => metrics.counter('naalya_calls_total', 'Per school.', ['schoolId'])).toThrow(/may not have the label "schoolId"/);
  });

  it('measures in seconds', async () => {
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const seconds = secondsSince(started);
    expect(seconds).toBeGreaterThan(0.015);
    expect(seconds).toBeLessThan(5);
  });
});

describe('MetricsServer', () => {
  it('answers GET /metrics in the Prometheus text format on its own port, and nothing else', async () => {
    const metrics = createMetricsRegistry('served');
    metrics.counter('naalya_served_total', 'Served.').inc();
    const server = new MetricsServer(metrics.registry, { host: '127.0.0.1', port: 0 });
    const { port } = await server.listen();
    try {
      const response = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(await response.text()).toContain('naalya_served_total{app="served"} 1');
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${port}/metrics`, { method: 'POST' })).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

describe('loadMetricsConfig', () => {
  it('is off unless METRICS_PORT is set; 0 takes a free port; METRICS_HOST defaults to the loopback', () => {
    expect(loadMetricsConfig({})).toBeUndefined();
    expect(loadMetricsConfig({ METRICS_PORT: '' })).toBeUndefined();
    expect(loadMetricsConfig({ METRICS_PORT: '0' })).toEqual({ host: '127.0.0.1', port: 0 });
    expect(loadMetricsConfig({ METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' })).toEqual({ host: '0.0.0.0', port: 9464 });
  });

  it('names the variable for a bad port, a bad host, and the API port reused', () => {
    const failure = (env: Record<string, string>, reserved?: Record<string, number>) => {
      try {
        loadMetricsConfig(env, reserved);
      } catch (error) {
        expect(error).toBeInstanceOf(ObservabilityConfigError);
        return (error as ObservabilityConfigError).message;
      }
      throw new Error('expected a refusal');
    };
    expect(failure({ METRICS_PORT: 'abc' })).toMatch(/^METRICS_PORT must be a port number .*got "abc"/);
    expect(failure({ METRICS_PORT: '70000' })).toMatch(/^METRICS_PORT must be a port number/);
    expect(failure({ METRICS_PORT: '3000' }, { HTTP_PORT: 3000 })).toMatch(/^METRICS_PORT must differ from HTTP_PORT \(3000\)/);
    expect(failure({ METRICS_PORT: '9464', METRICS_HOST: 'http://x' })).toMatch(/^METRICS_HOST must be a host name/);
  });
});

describe('loadLogFormat', () => {
  it('defaults to json in production and pretty elsewhere, and takes either when set', () => {
    expect(loadLogFormat({ NODE_ENV: 'production' })).toBe('json');
    expect(loadLogFormat({})).toBe('pretty');
    expect(loadLogFormat({ NODE_ENV: 'production', LOG_FORMAT: 'pretty' })).toBe('pretty');
    expect(loadLogFormat({ LOG_FORMAT: 'json' })).toBe('json');
  });

  it('names LOG_FORMAT for any other value', () => {
    expect(() => loadLogFormat({ LOG_FORMAT: 'xml' })).toThrow('LOG_FORMAT must be one of json, pretty (got "xml")');
  });
});
