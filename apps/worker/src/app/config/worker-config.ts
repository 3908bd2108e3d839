import { ObservabilityConfigError, loadLogFormat, loadMetricsConfig, type LogFormat, type MetricsConfig } from '@naalya/observability';
import { MessageSigningKeyError, SIGNING_KEY_HINT, brokerUrlListProblem, parseMessageVerifyingKeys, rmqNames, type MessageVerifyingKeys, type RmqNames } from '@naalya/rmq';
import { RUN_EVENTS_LINGER_MS_DEFAULT } from '../../naalya-agent/runs/run-event.buffer.js';
import { WORKER_PRODUCTION_SECRETS, productionSecretProblems } from '@naalya/access';
import { z } from 'zod';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'] as const;
export type WorkerLogLevel = (typeof LOG_LEVELS)[number];

const MIN_TOOL_CALL_TIMEOUT_MS = 100;
const MAX_TOOL_CALL_TIMEOUT_MS = 300_000;

const wholeNumber = (fallback: string, min: number, max: number, unit: string) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, { error: `must be a whole number${unit ? ` of ${unit}` : ''}` })
    .default(fallback)
    .transform(Number)
    .pipe(
      z
        .number()
        .min(min, { error: `must be at least ${min}${unit ? ` ${unit}` : ''}` })
        .max(max, { error: `must be at most ${max}${unit ? ` ${unit}` : ''}` }),
    );

// Empty reads as unset: `OPENAI_API_KEY=` is how a .env file leaves a key out.
const optionalSecret = z
  .string()
  .trim()
  .optional()
  .transform((value) => value || undefined);

const queueName = (fallback: string) =>
  z
    .string()
    .trim()
    .regex(/^[A-Za-z0-9._:-]{1,200}$/, { error: 'must be a queue name of letters, digits, ".", "_", ":" or "-"' })
    .default(fallback);

// The public halves only: the server holds the private key. Several (comma-separated) while a key is rotated.
const runSigningPublicKeys = z
  .string({
    error: (issue) =>
      issue.input === undefined
        ? `is required: the Ed25519 public keys run steps are verified with, "kid:base64(SPKI DER)[,kid2:...]" (${SIGNING_KEY_HINT}; the server holds the private half)`
        : 'must be a string',
  })
  .transform((value, context): MessageVerifyingKeys => {
    try {
      return parseMessageVerifyingKeys(value);
    } catch (error) {
      if (!(error instanceof MessageSigningKeyError)) throw error;
      context.addIssue({ code: 'custom', message: `is invalid: ${error.message}` });
      return z.NEVER;
    }
  });

// The worker's environment only. It holds no server database URL and no JWT secret: identity reaches
// the worker already resolved, inside the runtime context the server minted at dispatch.
const workerEnvSchema = z.object({
  // One amqp(s) URL, or the nodes of one cluster separated by commas: each reconnection tries the next.
  RABBITMQ_URL: z
    .string({
      error: (issue) =>
        issue.input === undefined
          ? "is required: the amqp:// URL of the worker's own broker user (several nodes of one cluster: separated by commas)"
          : 'must be a string',
    })
    .superRefine((value, context) => {
      const problem = brokerUrlListProblem(value);
      if (problem) context.addIssue({ code: 'custom', message: problem });
    }),
  // A run step is run only if the server's broker user published it (AMQP user_id, which RabbitMQ validates) and
  // RUN_SIGNING_PUBLIC_KEYS verify its signature.
  SERVER_BROKER_USER: z.string().trim().min(1, { error: 'must name the broker user the server publishes run steps as' }).default('naalya_server'),
  RUN_SIGNING_PUBLIC_KEYS: runSigningPublicKeys,
  AGENT_TOOLS_QUEUE: queueName('agent-tools'),
  AGENT_RUNS_QUEUE: queueName('agent-runs'),
  TOOL_CALL_TIMEOUT_MS: z
    .string()
    .trim()
    .regex(/^\d+$/, { error: 'must be a whole number of milliseconds' })
    .default('15000')
    .transform(Number)
    .pipe(
      z
        .number()
        .min(MIN_TOOL_CALL_TIMEOUT_MS, { error: `must be at least ${MIN_TOOL_CALL_TIMEOUT_MS} ms` })
        .max(MAX_TOOL_CALL_TIMEOUT_MS, { error: `must be at most ${MAX_TOOL_CALL_TIMEOUT_MS} ms` }),
    ),
  // The checkpoint role: it reaches only the agent_checkpoints schema, never the server's tables.
  CHECKPOINT_DATABASE_URL: z.url({
    protocol: /^postgres(ql)?$/,
    error: (issue) =>
      issue.input === undefined
        ? "is required: the postgres:// URL of the checkpoint role (naalya_checkpoint), which reaches only the checkpoint schema"
        : 'must be a postgres:// URL, for example postgres://naalya_checkpoint:secret@127.0.0.1:5432/naalya',
  }),
  CHECKPOINT_RETENTION_DAYS: wholeNumber('30', 1, 3650, 'days'),
  // How long one run step (a user message, or answers to questions) may take before it is stopped.
  RUN_STEP_TIMEOUT_MS: wholeNumber('300000', 1_000, 3_600_000, 'ms'),
  // Run steps handled at once by this worker.
  RUN_CONCURRENCY: wholeNumber('4', 1, 64, ''),
  AGENT_MODEL: z
    .string()
    .trim()
    .regex(/^(scripted|[a-z0-9-]+:\S+)$/, { error: 'must be "scripted" or "provider:model", for example openai:gpt-4.1' })
    .default('scripted'),
  // Another server for the provider AGENT_MODEL names: an OpenAI-compatible one a school hosts (vLLM, llama.cpp's server,
  // LM Studio, Ollama's /v1), a gateway, or the model simulator. Its models count as self-hosted for the schools' data
  // choices. Unset: the provider's own API.
  AGENT_MODEL_BASE_URL: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, for example http://127.0.0.1:8000/v1' })
    .optional()
    .or(z.literal('').transform(() => undefined)),
  // A failed model request (429, 5xx, a dropped connection) is asked again up to this many times, after the retry-after
  // the provider sent (honoured up to a minute) or a growing backoff; 401, 403 and other 4xx are never retried.
  AGENT_MODEL_MAX_RETRIES: wholeNumber('2', 0, 6, ''),
  // How long the model server has to answer one request (each retry has its own).
  AGENT_MODEL_TIMEOUT_MS: wholeNumber('60000', 1_000, 600_000, 'ms'),
  // The worker's /health and /ready. 0 or empty: no HTTP endpoint. 3001 beside the server's 3000.
  WORKER_HEALTH_PORT: z
    .string()
    .trim()
    .regex(/^\d*$/, { error: 'must be a port number, or 0 or empty for none' })
    .default('3001')
    .transform((value) => (value === '' ? 0 : Number(value)))
    .pipe(z.number().max(65_535, { error: 'must be at most 65535' })),
  WORKER_HEALTH_HOST: z.string().trim().min(1, { error: 'must name the interface /health and /ready listen on' }).default('127.0.0.1'),
  // Paces the scripted model's streamed chunks so a client sees tokens arrive over time (the demo, browser tests, the
  // bench); 0 streams them as fast as they are made. Only the scripted model reads it.
  AGENT_SCRIPTED_STREAM_DELAY_MS: wholeNumber('0', 0, 1_000, 'ms'),
  // How long a run's first event after an idle spell waits for the next ones to share its message: tokens then cost the
  // run-events ingest one message per few tokens, not one each. Added latency at most this; 0 sends each at once.
  RUN_EVENTS_LINGER_MS: wholeNumber(String(RUN_EVENTS_LINGER_MS_DEFAULT), 0, 250, 'ms'),
  OPENAI_API_KEY: optionalSecret,
  ANTHROPIC_API_KEY: optionalSecret,
  GOOGLE_API_KEY: optionalSecret,
  MISTRAL_API_KEY: optionalSecret,
  GROQ_API_KEY: optionalSecret,
  // "info" is the shared spelling (the server's .env section uses it); Nest calls that level "log".
  LOG_LEVEL: z
    .enum([...LOG_LEVELS, 'info'], { error: `must be one of info, ${LOG_LEVELS.join(', ')}` })
    .default('log')
    .transform((level): WorkerLogLevel => (level === 'info' ? 'log' : level)),
});

export type WorkerConfig = {
  rabbitmqUrl: string;
  queues: RmqNames;
  toolCallTimeoutMs: number;
  agentModel: string;
  /** AGENT_MODEL_BASE_URL: the provider's API at another server (self-hosted); undefined for the provider's own. */
  agentModelBaseUrl: string | undefined;
  /** The pause before each streamed chunk of the scripted model after its first. */
  scriptedStreamDelayMs: number;
  /** Retries of a failed model request, and the time each request has (AGENT_MODEL_MAX_RETRIES, AGENT_MODEL_TIMEOUT_MS). */
  modelRequests: { maxRetries: number; timeoutMs: number };
  /** Where /health and /ready listen; undefined: not at all. */
  health: { port: number; host: string } | undefined;
  /** Provider keys by variable name; only the one AGENT_MODEL names is needed. */
  providerKeys: Readonly<Record<string, string | undefined>>;
  checkpoint: { databaseUrl: string; retentionDays: number };
  runs: { stepTimeoutMs: number; concurrency: number; eventLingerMs: number };
  /** Who may hand this worker a run step: the server's broker user, signing with a key whose public half is here. */
  runSteps: { serverBrokerUser: string; publicKeys: MessageVerifyingKeys };
  logLevel: WorkerLogLevel;
};

export class WorkerConfigError extends Error {
  override readonly name = 'WorkerConfigError';
}

// Secrets are never echoed back: RABBITMQ_URL carries the broker password.
const PROVIDER_KEY_VARIABLES = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'GOOGLE_API_KEY', 'MISTRAL_API_KEY', 'GROQ_API_KEY'] as const;
// The public keys are no secret, only long: their error names the key that is wrong.
// A base URL may name an internal host or carry a token: not echoed either.
const SECRET_VARIABLES = new Set<string>(['RABBITMQ_URL', 'CHECKPOINT_DATABASE_URL', 'RUN_SIGNING_PUBLIC_KEYS', 'AGENT_MODEL_BASE_URL', ...PROVIDER_KEY_VARIABLES]);

const describeIssue = (issue: z.core.$ZodIssue, env: Record<string, string | undefined>): string => {
  const variable = String(issue.path[0] ?? '');
  const value = env[variable];
  const received = value === undefined || SECRET_VARIABLES.has(variable) ? '' : ` (got "${value}")`;
  return `${variable} ${issue.message}${received}`;
};

export const loadWorkerConfig = (env: Record<string, string | undefined>): WorkerConfig => {
  const parsed = workerEnvSchema.safeParse(env);
  // With NODE_ENV=production, a secret published in the repository (or too short) stops the start like a bad value.
  const secrets = productionSecretProblems(WORKER_PRODUCTION_SECRETS, env).map((problem) => `  - ${problem}`);
  if (!parsed.success || secrets.length > 0) {
    const lines = [...(parsed.success ? [] : parsed.error.issues.map((issue) => `  - ${describeIssue(issue, env)}`)), ...secrets];
    throw new WorkerConfigError(`Invalid worker configuration:\n${lines.join('\n')}`);
  }
  const values = parsed.data;
  return {
    rabbitmqUrl: values.RABBITMQ_URL,
    queues: rmqNames(values.AGENT_TOOLS_QUEUE, values.AGENT_RUNS_QUEUE),
    toolCallTimeoutMs: values.TOOL_CALL_TIMEOUT_MS,
    agentModel: values.AGENT_MODEL,
    agentModelBaseUrl: values.AGENT_MODEL_BASE_URL,
    scriptedStreamDelayMs: values.AGENT_SCRIPTED_STREAM_DELAY_MS,
    modelRequests: { maxRetries: values.AGENT_MODEL_MAX_RETRIES, timeoutMs: values.AGENT_MODEL_TIMEOUT_MS },
    health: values.WORKER_HEALTH_PORT === 0 ? undefined : { port: values.WORKER_HEALTH_PORT, host: values.WORKER_HEALTH_HOST },
    providerKeys: Object.fromEntries(PROVIDER_KEY_VARIABLES.map((variable) => [variable, values[variable]])),
    checkpoint: { databaseUrl: values.CHECKPOINT_DATABASE_URL, retentionDays: values.CHECKPOINT_RETENTION_DAYS },
    runs: { stepTimeoutMs: values.RUN_STEP_TIMEOUT_MS, concurrency: values.RUN_CONCURRENCY, eventLingerMs: values.RUN_EVENTS_LINGER_MS },
    runSteps: { serverBrokerUser: values.SERVER_BROKER_USER, publicKeys: values.RUN_SIGNING_PUBLIC_KEYS },
    logLevel: values.LOG_LEVEL,
  };
};

// Nest enables exactly the levels listed: the chosen one and every more severe one.
export const enabledLogLevels = (level: WorkerLogLevel): WorkerLogLevel[] =>
  LOG_LEVELS.slice(0, LOG_LEVELS.indexOf(level) + 1);

export const WORKER_CONFIG = Symbol('WorkerConfig');

/**
 * LOG_FORMAT and METRICS_PORT / METRICS_HOST, read beside the rest so a bad value stops the worker the same way, naming
 * the variable. /metrics may not share the health port: probes and scrapes are told apart by port.
 */
export const loadWorkerObservability = (
  env: Record<string, string | undefined>,
  config: Pick<WorkerConfig, 'health'>,
): { logFormat: LogFormat; metrics: MetricsConfig | undefined } => {
  try {
    return { logFormat: loadLogFormat(env), metrics: loadMetricsConfig(env, config.health ? { WORKER_HEALTH_PORT: config.health.port } : {}) };
  } catch (error) {
    if (!(error instanceof ObservabilityConfigError)) throw error;
    throw new WorkerConfigError(`Invalid worker configuration:\n  - ${error.message}`);
  }
};
