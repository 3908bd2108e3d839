import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunStreamEvent } from '@naalya/agent-tools';
import { createTestStack, readRunEvents, type TestStack } from '@naalya/test-stack';
import type { BuiltProcess } from '@naalya/test-stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Metrics and logs across both processes: a conversation with a tool call runs through the built server and worker
// (JSON logs, /metrics on a free port each), then each /metrics is scraped for its series, the API port is checked not
// to serve /metrics, and the log lines of the two processes are matched by the run's and the tool call's ids. Tracing is
// on (to a receiver that accepts and drops the spans; one-trace.e2e-spec checks the spans), so lines carry the traceId.
let stack: TestStack;
let collector: Server;
let worker: BuiltProcess;
let token: string;
let serverMetricsUrl: string;
let workerMetricsUrl: string;
let runId: string;
let events: RunStreamEvent[];

const metricsUrlIn = (output: string, who: string): string => {
  const url = /Metrics on (http:\/\/[\d.]+:\d+\/metrics)/.exec(output)?.[1];
  if (!url) throw new Error(`The ${who} did not say where /metrics is:\n${output.slice(-2000)}`);
  return url;
};

/** The process's output as JSON log lines; a line that is not JSON fails the test (LOG_FORMAT=json means every line). */
const jsonLines = (output: string): Record<string, unknown>[] =>
  output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`Not a JSON log line: ${line}`);
      }
    });

const scrape = async (url: string): Promise<string> => {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
};

/** The value of the first sample of `name` whose labels include all of `labels`. */
const sampleOf = (text: string, name: string, labels: Record<string, string> = {}): number | undefined => {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map(([, key, value]) => [key, value]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
};

beforeAll(async () => {
  collector = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}` };
  stack = await createTestStack({ name: 'metrics' });
  await stack.startServer({ env: { METRICS_PORT: '0', LOG_FORMAT: 'json', LOG_LEVEL: 'debug', ...tracing } });
  worker = await stack.startWorker({ METRICS_PORT: '0', LOG_FORMAT: 'json', LOG_LEVEL: 'debug', ...tracing });
  serverMetricsUrl = metricsUrlIn(stack.server().output(), 'server');
  workerMetricsUrl = metricsUrlIn(worker.output(), 'worker');
  token = await stack.login('admin@greenhill.school');

  const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
  const thread = (await (await fetch(`${stack.server().baseUrl}/agent/threads`, { method: 'POST', headers, body: '{}' })).json()) as { id: string };
  const started = await fetch(`${stack.server().baseUrl}/agent/threads/${thread.id}/runs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message: 'list departments' }),
  });
  expect(started.status).toBe(201);
  runId = ((await started.json()) as { runId: string }).runId;
  events = (await readRunEvents(stack.server().baseUrl, token, { threadId: thread.id, runId }, { signal: AbortSignal.timeout(30_000) })).map(({ event }) => event);
}, 150_000);

afterAll(async () => {
  await stack?.teardown();
  await new Promise((resolve) => collector?.close(resolve));
});

describe('metrics and logs of a conversation, across the server and the worker', () => {
  it('ran the conversation, with a tool call', () => {
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(events.some((event) => event.type === 'TOOL_CALL_END')).toBe(true);
  });

  it("the server's /metrics has the tool calls, their duration in seconds, runs by status, event lag, the pool and the rest", async () => {
    const text = await scrape(serverMetricsUrl);
    // The scripted model answers "list departments" with that tool.
    const call = { tool: 'list.departments', outcome: 'ok' };
    expect(sampleOf(text, 'naalya_tool_calls_total', call)).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_tool_call_duration_seconds_bucket', { ...call, le: '+Inf' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_tool_call_duration_seconds_sum', call)).toBeLessThan(30);
    expect(sampleOf(text, 'naalya_agent_runs_total', { status: 'running' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_agent_runs_total', { status: 'finished' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_run_event_lag_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_db_pool_connections', { state: 'max' })).toBe(Number(stack.env['DATABASE_POOL_SIZE']));
    expect(sampleOf(text, 'naalya_db_pool_connections', { state: 'in_use' })).toBeGreaterThanOrEqual(0);
    // Declared from the start, so an alert on them has a series before the first event (a counter without labels is 0).
    expect(sampleOf(text, 'naalya_agent_run_cancels_total')).toBe(0);
    for (const family of [
      'naalya_agent_run_lease_expiries_total',
      'naalya_tool_call_approvals_total',
      'naalya_tool_call_quota_refusals_total',
      'naalya_dead_letters_total',
      'naalya_redeliveries_total',
    ]) {
      expect(text).toContain(`# TYPE ${family} counter`);
    }
    expect(sampleOf(text, 'process_cpu_user_seconds_total', { app: 'server' })).toBeGreaterThan(0);
    // No series per person or per school.
    expect(text).not.toMatch(/(user|school|owner|thread|run|call)_?id="/i);
  });

  it("the worker's /metrics has its run steps, tool calls as it saw them, model calls and tokens", async () => {
    const text = await scrape(workerMetricsUrl);
    expect(sampleOf(text, 'naalya_worker_run_steps_total', { kind: 'start', outcome: 'success' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_worker_run_step_duration_seconds_count', { kind: 'start' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_worker_tool_calls_total', { tool: 'list.departments', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_worker_tool_call_duration_seconds_count', { tool: 'list.departments' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_model_calls_total', { outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_model_call_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(sampleOf(text, 'naalya_model_tokens_total', { direction: 'output' })).toBeGreaterThan(0);
    expect(sampleOf(text, 'naalya_worker_redeliveries_total')).toBe(0);
    expect(text).not.toMatch(/(user|school|owner|thread|run|call)_?id="/i);
  });

  it('the example alert rules use only series the two apps serve', async () => {
    const served = `${await scrape(serverMetricsUrl)}\n${await scrape(workerMetricsUrl)}`;
    const rules = readFileSync(new URL('../../../deploy/prometheus/alerts.yml', import.meta.url), 'utf8');
    const used = new Set([...rules.matchAll(/\bnaalya_[a-z_]+/g)].map(([name]) => name.replace(/_(bucket|count|sum)$/, '')));
    expect(used.size).toBeGreaterThanOrEqual(8);
    expect([...used].filter((name) => !served.includes(`# TYPE ${name} `))).toEqual([]);
  });

  it('/metrics is on its own port, never on the public API port', async () => {
    const api = new URL(stack.server().baseUrl);
    expect(new URL(serverMetricsUrl).port).not.toBe(api.port);
    const onApi = await fetch(`${stack.server().baseUrl}/metrics`);
    expect(onApi.status).toBe(404);
    expect(await onApi.text()).not.toContain('naalya_tool_calls_total');
  });

  it("every log line is JSON, and one tool call's lines in both processes carry its runId, callId and traceId", () => {
    const serverLines = jsonLines(stack.server().output());
    const workerLines = jsonLines(worker.output());
    expect(serverLines.every((line) => line['app'] === 'server' && typeof line['level'] === 'string' && typeof line['time'] === 'string')).toBe(true);
    expect(workerLines.every((line) => line['app'] === 'worker')).toBe(true);

    const serverCall = serverLines.find((line) => line['msg'] === 'Tool call' && line['runId'] === runId);
    expect(serverCall).toMatchObject({ context: 'ToolCalls', outcome: 'ok', level: 'debug' });
    const callId = serverCall?.['callId'];
    expect(typeof callId).toBe('string');
    // The worker's line for the same call, found by the ids alone; both in the run's one trace.
    const workerCall = workerLines.find((line) => line['msg'] === 'Tool call' && line['callId'] === callId);
    expect(workerCall).toMatchObject({ runId, outcome: 'ok' });
    expect(serverCall?.['traceId']).toMatch(/^[0-9a-f]{32}$/);
    expect(workerCall?.['traceId']).toBe(serverCall?.['traceId']);
    expect(workerLines.find((line) => typeof line['msg'] === 'string' && line['msg'].includes('finished: success'))).toMatchObject({ runId, context: 'AgentRunConsumer' });
  });

  it('a LOG_FORMAT or METRICS_PORT it cannot use stops each process, naming the variable', async () => {
    await expect(stack.startServer({ env: { LOG_FORMAT: 'xml' } })).rejects.toThrow(/exited at start-up[\s\S]*LOG_FORMAT must be one of json, pretty \(got "xml"\)/);
    await expect(stack.startWorker({ METRICS_PORT: 'nine' })).rejects.toThrow(/exited at start-up[\s\S]*METRICS_PORT must be a port number/);
  });
});
