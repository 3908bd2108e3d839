import type { AgentToolResult } from '@naalya/agent-tools';
import { Logger } from '@nestjs/common';
import { DURATION_BUCKETS_SECONDS, createMetricsRegistry, secondsSince, writesLevel } from '@naalya/observability';

/**
 * The server's series, one registry for the process (served by /metrics on METRICS_PORT, see main.ts). Labels are
 * bounded sets only: a tool's event name, an outcome code, a status, a reason. Never a user, school, thread or run id.
 * Counted where the thing happens, inside its unit of work: a unit that then rolls back still counted (rare; the
 * counters are for rates and alerts, the database stays the record).
 */
const metrics = createMetricsRegistry('server');

export const serverMetrics = {
  registry: metrics.registry,
  toolCalls: metrics.counter('naalya_tool_calls_total', 'Agent tool calls executed by the server, by tool and outcome (ok or the error code).', [
    'tool',
    'outcome',
  ]),
  toolCallDuration: metrics.histogram(
    'naalya_tool_call_duration_seconds',
    'Time execute() took for an agent tool call, from the delivery to the reply, by tool and outcome.',
    DURATION_BUCKETS_SECONDS,
    ['tool', 'outcome'],
  ),
  runStatuses: metrics.counter('naalya_agent_runs_total', 'Agent runs entering each status (created queued or running, then as their events move them).', [
    'status',
  ]),
  leaseExpiries: metrics.counter(
    'naalya_agent_run_lease_expiries_total',
    'Agent run steps whose worker lease expired, by what the sweeper did (redispatched, or abandoned after the last attempt).',
    ['action'],
  ),
  cancels: metrics.counter('naalya_agent_run_cancels_total', 'Agent runs cancelled (by their user, or interrupted by a newer message).'),
  approvals: metrics.counter('naalya_tool_call_approvals_total', 'Answers to tool calls that need confirmation (granted, denied), and approvals found expired at use.', [
    'outcome',
  ]),
  quotaRefusals: metrics.counter('naalya_tool_call_quota_refusals_total', 'Agent tool calls refused by a per-minute quota, by which quota.', ['quota']),
  deadLetters: metrics.counter('naalya_dead_letters_total', 'Dead-lettered run steps the server received, by the broker\u2019s reason.', ['reason']),
  redeliveries: metrics.counter(
    'naalya_redeliveries_total',
    'Messages the broker delivered again to the server (a consumer died or its channel closed before settling them), by queue kind.',
    ['kind'],
  ),
  retentionPurged: metrics.counter('naalya_retention_purged_rows_total', 'Rows the retention purge deleted, by kind (runs, run_events, approvals, ledger, audit).', [
    'kind',
  ]),
  retentionPurges: metrics.counter('naalya_retention_purges_total', 'Retention purges this instance ran, by outcome (ok, failed).', ['outcome']),
  eventLag: metrics.histogram(
    'naalya_run_event_lag_seconds',
    'Time from a run event made by the worker to its storing by the server (includes clock skew between the hosts).',
    DURATION_BUCKETS_SECONDS,
  ),
};

const toolCallLog = new Logger('ToolCalls');

/** The outcome label of a tool call's result: `ok`, or its (bounded) error code. */
export const toolCallOutcome = (result: AgentToolResult<unknown>): string => ('error' in result ? (result.code ?? 'ERROR') : 'ok');

/** Times one execute() and counts it under its tool and outcome; a throw (execute() itself never throws) counts as THREW. */
export const measureToolCall = <T>(tool: string, call: () => Promise<AgentToolResult<T>>): Promise<AgentToolResult<T>> => {
  const started = performance.now();
  const measured = (outcome: string): void => {
    const labels = { tool, outcome };
    const seconds = secondsSince(started);
    serverMetrics.toolCalls.inc(labels);
    serverMetrics.toolCallDuration.observe(labels, seconds);
    // One line per call at debug (an access log of the tool hop), with the callId and runId of the caller's context.
    if (writesLevel(toolCallLog, 'debug')) toolCallLog.debug({ msg: 'Tool call', tool, outcome, durationMs: Math.round(seconds * 10_000) / 10 });
  };
  // A promise chain, not an async function: one promise per call instead of three (each costs hooks on Node 20).
  let pending: Promise<AgentToolResult<T>>;
  try {
    pending = call();
  } catch (error) {
    pending = Promise.reject(error);
  }
  return pending.then(
    (result) => {
      measured(toolCallOutcome(result));
      return result;
    },
    (error: unknown) => {
      measured('THREW');
      throw error;
    },
  );
};

type PoolLike = { totalCount: number; idleCount: number; waitingCount: number; options?: { max?: number } };

let currentPool: (() => PoolLike | undefined) | undefined;

// The database pool as a gauge read at each scrape: connections in use and idle, clients waiting for one, and the
// pool's size (so in_use / max near 1 is the alert).
metrics.gauge('naalya_db_pool_connections', 'The server\u2019s PostgreSQL pool: connections by state (in_use, idle, waiting clients, max).', ['state'], (gauge) => {
  const pool = currentPool?.();
  if (!pool) return;
  gauge.set({ state: 'in_use' }, pool.totalCount - pool.idleCount);
  gauge.set({ state: 'idle' }, pool.idleCount);
  gauge.set({ state: 'waiting' }, pool.waitingCount);
  if (pool.options?.max !== undefined) gauge.set({ state: 'max' }, pool.options.max);
});

/** The pool the gauge reads, once the app's DataSource exists (the latest app's, when a test builds several). */
export const watchDatabasePool = (pool: () => PoolLike | undefined): void => {
  currentPool = pool;
};
