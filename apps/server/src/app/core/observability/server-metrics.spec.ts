import { describe, expect, it } from 'vitest';
import { measureToolCall, serverMetrics, toolCallOutcome, watchDatabasePool } from './server-metrics.js';

const sample = async (name: string, labels: Record<string, string>): Promise<number | undefined> => {
  const metric = (await serverMetrics.registry.getMetricsAsJSON()).find((entry) => entry.name === name);
  return metric?.values.find((value) => Object.entries(labels).every(([key, expected]) => value.labels[key] === expected))?.value;
};

describe('server metrics', () => {
  it('measureToolCall counts each call under its tool and outcome, and times it in seconds', async () => {
    const before = (await sample('naalya_tool_calls_total', { tool: 'spec.tool', outcome: 'ok' })) ?? 0;
    await measureToolCall('spec.tool', async () => ({ data: 1, scopeContext: 'school' }));
    await measureToolCall('spec.tool', async () => ({ error: 'No.', code: 'PERMISSION_DENIED' as const }));
    await expect(measureToolCall('spec.tool', () => Promise.reject(new Error('bug')))).rejects.toThrow('bug');
    expect(await sample('naalya_tool_calls_total', { tool: 'spec.tool', outcome: 'ok' })).toBe(before + 1);
    expect(await sample('naalya_tool_calls_total', { tool: 'spec.tool', outcome: 'PERMISSION_DENIED' })).toBeGreaterThanOrEqual(1);
    expect(await sample('naalya_tool_calls_total', { tool: 'spec.tool', outcome: 'THREW' })).toBeGreaterThanOrEqual(1);
    const histogram = (await serverMetrics.registry.getMetricsAsJSON()).find((entry) => entry.name === 'naalya_tool_call_duration_seconds');
    const count = histogram?.values.find(
      (value) => (value as { metricName?: string }).metricName === 'naalya_tool_call_duration_seconds_count' && value.labels['tool'] === 'spec.tool' && value.labels['outcome'] === 'ok',
    );
    expect(count?.value).toBe(before + 1);
  });

  it('labels an error result by its code', () => {
    expect(toolCallOutcome({ data: null, scopeContext: 'school' })).toBe('ok');
    expect(toolCallOutcome({ error: 'x', code: 'TOOL_FAILED' })).toBe('TOOL_FAILED');
  });

  it('reads the database pool at each scrape', async () => {
    const pool = { totalCount: 5, idleCount: 2, waitingCount: 1, options: { max: 8 } };
    watchDatabasePool(() => pool);
    expect(await sample('naalya_db_pool_connections', { state: 'in_use' })).toBe(3);
    pool.idleCount = 5;
    expect(await sample('naalya_db_pool_connections', { state: 'in_use' })).toBe(0);
    expect(await sample('naalya_db_pool_connections', { state: 'max' })).toBe(8);
    expect(await sample('naalya_db_pool_connections', { state: 'waiting' })).toBe(1);
  });

  it('has no label naming a user, school, thread, run or call', async () => {
    const labels = (await serverMetrics.registry.getMetricsAsJSON()).flatMap((metric) => metric.values.flatMap((value) => Object.keys(value.labels)));
    expect(labels.filter((label) => /user|school|thread|run|call|owner|sub/i.test(label))).toEqual([]);
  });
});
