import type { AgentToolResult } from '@naalya/agent-tools';
import { DURATION_BUCKETS_SECONDS, createMetricsRegistry } from '@naalya/observability';

/**
 * The worker's series, one registry for the process (served by /metrics on METRICS_PORT, see main.ts). The server
 * counts what it decides (tool calls executed, runs by status); the worker counts what only it sees: run steps as it ran
 * them, tool calls as the client saw them (a timeout is the worker's outcome, not the server's), model calls and tokens.
 * Labels are bounded sets only (a tool's event, an outcome, a direction); never a user, school, thread or run id.
 */
const metrics = createMetricsRegistry('worker');

/** Model calls take seconds to minutes: buckets past the tool calls'. */
const MODEL_CALL_BUCKETS_SECONDS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300] as const;

export const workerMetrics = {
  registry: metrics.registry,
  runSteps: metrics.counter('naalya_worker_run_steps_total', 'Run steps the worker handled, by outcome (success, interrupt, error, stopped, dropped).', [
    'kind',
    'outcome',
  ]),
  runStepDuration: metrics.histogram('naalya_worker_run_step_duration_seconds', 'Time the worker spent on one run step, by kind.', MODEL_CALL_BUCKETS_SECONDS, ['kind']),
  redeliveries: metrics.counter('naalya_worker_redeliveries_total', 'Run steps the broker delivered again (a worker died or its channel closed mid-step).'),
  toolCalls: metrics.counter(
    'naalya_worker_tool_calls_total',
    'Agent tool calls as the worker saw them, by tool and outcome (ok, the error code, or THREW for a timeout or a stopped step).',
    ['tool', 'outcome'],
  ),
  toolCallDuration: metrics.histogram(
    'naalya_worker_tool_call_duration_seconds',
    'Round trip of an agent tool call from the worker: publish, the server\u2019s work, the reply.',
    DURATION_BUCKETS_SECONDS,
    ['tool'],
  ),
  modelCalls: metrics.counter('naalya_model_calls_total', 'Language model calls, by outcome (ok, or the failure\u2019s code).', ['outcome']),
  modelCallDuration: metrics.histogram('naalya_model_call_duration_seconds', 'Time a language model call took, retries included.', MODEL_CALL_BUCKETS_SECONDS),
  modelTokens: metrics.counter('naalya_model_tokens_total', 'Tokens of language model calls as reported (or estimated), by direction (input, output).', ['direction']),
};

/** The outcome label of a tool call's result: `ok`, or its (bounded) error code. */
export const toolCallOutcome = (result: AgentToolResult): string => ('error' in result ? (result.code ?? 'ERROR') : 'ok');
