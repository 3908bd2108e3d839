import type { LogLevel } from '@nestjs/common';
import { SERVER_PRODUCTION_SECRETS, productionSecretProblems } from '@naalya/access';
import { ObservabilityConfigError, loadLogFormat, loadMetricsConfig, type LogFormat, type MetricsConfig } from '@naalya/observability';
import { MessageSigningKeyError, SIGNING_KEY_HINT, brokerUrlListProblem, parseMessageSigningKey } from '@naalya/rmq';
import { z } from 'zod';
import { parseModelListSetting, type ModelList } from './model-list.js';
import { trustedProxiesProblem } from '../http/client-address.js';
import { currentKeyProblem, previousKeysProblem } from './signing-key-ring.js';

const postgresUrl = z
  .string()
  .url()
  .refine((value) => /^postgres(ql)?:\/\//.test(value), 'must be a postgres:// URL');

// Checked here so a bad key stops the process at start-up with the variable's name; parsed again by its user.
const runSigningKey = z.string().superRefine((value, context) => {
  try {
    parseMessageSigningKey(value);
  } catch (error) {
    if (!(error instanceof MessageSigningKeyError)) throw error;
    context.addIssue({ code: 'custom', message: error.message });
  }
});

// One amqp(s) URL, or the nodes of one cluster separated by commas (each reconnection tries the next). The reason
// names the bad entry's position, never its text: the URLs carry the broker password.
const brokerUrlList = z.string().superRefine((value, context) => {
  const problem = brokerUrlListProblem(value);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});

// Addresses and CIDR blocks of the load balancers in front of the server: only from them is X-Forwarded-For believed.
const trustedProxies = z.string().superRefine((value, context) => {
  const problem = trustedProxiesProblem(value);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});

// An HMAC key, "kid:secret" or a plain secret (key id "default"); the previous keys are checked against it below.
const currentSigningKey = z.string().superRefine((value, context) => {
  const problem = currentKeyProblem(value);
  if (problem) context.addIssue({ code: 'custom', message: problem });
});

const modelList = z.string().transform((value, context): ModelList => {
  const parsed = parseModelListSetting(value);
  if (parsed.ok) return parsed.list;
  context.addIssue({ code: 'custom', message: parsed.reason });
  return z.NEVER;
});

/** A count of tokens where an empty value means "none set". */
const emptyAs = <T>(empty: T) => (value: unknown) => (value === '' ? empty : value);

const serverConfigSchema = z.object({
  DATABASE_URL: postgresUrl.describe('the app role (non-owner, NOBYPASSRLS)'),
  // The owner role bypasses row-level security: only the setup and seed CLIs need it (requireOwnerUrl), so a running
  // server is given none and a compromised one cannot reach past the policies.
  DATABASE_OWNER_URL: postgresUrl.optional().describe('the owner role, for migrations and setup only'),
  // The run-event notifier's LISTEN connection: must reach PostgreSQL directly (or through a session-mode pool), since
  // behind transaction pooling a LISTEN lands on a server connection other clients then use. Unset: DATABASE_URL.
  DATABASE_LISTEN_URL: postgresUrl.optional().describe('the app role, on a connection that bypasses transaction pooling'),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(100).default(8),
  DATABASE_STATEMENT_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  RABBITMQ_URL: brokerUrlList,
  // quorum on a cluster (replicated work queues); classic for a single node.
  RABBITMQ_QUEUE_TYPE: z.enum(['classic', 'quorum']).default('classic'),
  AGENT_TOOLS_QUEUE: z.string().min(1).default('agent-tools'),
  AGENT_RUNS_QUEUE: z.string().min(1).default('agent-runs'),
  TOOL_HANDLER_TIMEOUT_MS: z.coerce.number().int().min(100).default(30_000),
  SHUTDOWN_DRAIN_TIMEOUT_MS: z.coerce.number().int().min(0).default(10_000),
  JWT_SECRET: currentSigningKey,
  // Keys that signed login tokens before JWT_SECRET did ("kid:secret", comma-separated): still verified, never used to
  // sign. Remove one once JWT_TTL_SECONDS have passed since it stopped being current (signing-key-ring.ts).
  JWT_PREVIOUS_SECRETS: z.string().default(''),
  JWT_TTL_SECONDS: z.coerce.number().int().min(60).default(8 * 3600),
  DISPATCH_SIGNING_KEY: currentSigningKey,
  // The same for dispatch tokens: retire a key once DISPATCH_TOKEN_TTL_SECONDS have passed since it was replaced.
  DISPATCH_PREVIOUS_SIGNING_KEYS: z.string().default(''),
  DISPATCH_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).default(3600),
  WORKER_BROKER_USER: z.string().min(1).default('naalya_worker'),
  // The MCP door (naalya-ai/mcp/): its public URL, which is the audience of every token issued for it (a token for
  // another URL is refused), the broker user it publishes tool calls as (the server accepts tool calls from exactly the
  // worker's and this one), and its own broker URL (unset: the door answers 503 and publishes nothing).
  MCP_RESOURCE_URL: z.string().url().default('http://127.0.0.1:3000/mcp'),
  MCP_BROKER_USER: z.string().min(1).default('naalya_mcp'),
  MCP_RABBITMQ_URL: brokerUrlList.optional(),
  // Per-user bounds: live connected-app tokens, and the longest a token may live.
  MCP_TOKENS_PER_USER: z.coerce.number().int().min(1).max(1_000).default(20),
  MCP_TOKEN_MAX_DAYS: z.coerce.number().int().min(1).max(365).default(90),
  // Per connected-app token: tools/call requests a minute (counted like the tool-call quotas, shared by the replicas).
  MCP_CALLS_PER_MINUTE_PER_TOKEN: z.coerce.number().int().min(1).max(100_000).default(60),
  // Per person: MCP sessions open at once on one replica (each holds a direct run), and how long one may sit unused.
  MCP_SESSIONS_PER_USER: z.coerce.number().int().min(1).max(1_000).default(5),
  MCP_SESSION_IDLE_SECONDS: z.coerce.number().int().min(60).max(86_400).default(1_800),
  AGENT_RUN_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  AGENT_RUN_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  AGENT_RUN_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  AGENT_RUN_QUEUE_LIMIT: z.coerce.number().int().min(1).max(100).default(5),
  // Run event messages in hand at once (each at most 1 MiB): enough for every streaming run to have its next ones queued.
  RUN_EVENTS_PREFETCH: z.coerce.number().int().min(1).max(4096).default(256),
  AGENT_QUESTION_TTL_SECONDS: z.coerce.number().int().min(10).default(24 * 3600),
  // How long a yes to a confirmation stays usable: the worker resumes at once, so this only bounds how long a stuck or
  // redelivered resume can still act on it. At least a minute (a resume must be able to reach the call), at most a day.
  TOOL_APPROVAL_TTL_SECONDS: z.coerce.number().int().min(60).max(24 * 3600).default(15 * 60),
  AGENT_DIRECT_RUNS_PER_USER: z.coerce.number().int().min(1).max(10_000).default(50),
  // Per-user bounds on what a client can make the server hold: conversation threads (rows), agent runs running or queued
  // (worker time and model tokens) and open event streams (a socket and a LISTEN subscription each).
  AGENT_THREADS_PER_USER: z.coerce.number().int().min(1).max(1_000_000).default(1_000),
  AGENT_RUNS_IN_FLIGHT_PER_USER: z.coerce.number().int().min(1).max(1_000).default(10),
  AGENT_EVENT_STREAMS_PER_USER: z.coerce.number().int().min(1).max(1_000).default(10),
  // Signs every run step (Ed25519, `kid:base64(PKCS8 DER)`): the worker runs only steps it verifies with the public half.
  RUN_SIGNING_KEY: runSigningKey,
  // The platform's data choice: which language models a school's data may be sent to unless the school chose otherwise.
  AGENT_MODELS_ALLOWED: modelList.default('*'),
  // Tokens a school may use per UTC day unless a platform administrator set its own; unset or empty: no daily budget.
  AGENT_SCHOOL_DAILY_TOKEN_BUDGET: z.preprocess(emptyAs(null), z.coerce.number().int().min(1).max(1e15).nullable()).default(null),
  // The most tokens one run step may use; 0 or empty: no step budget.
  AGENT_STEP_TOKEN_BUDGET: z.preprocess(emptyAs(0), z.coerce.number().int().min(0).max(1e15)).default(200_000),
  TOOL_CALLS_PER_MINUTE_PER_SCHOOL: z.coerce.number().int().min(1).default(600),
  TOOL_CALLS_PER_MINUTE_PER_USER: z.coerce.number().int().min(1).default(120),
  // Where those calls are counted: postgres (shared by every replica) or memory (one process only: each replica would
  // allow the whole quota; kept as the bench's baseline and for a single server).
  TOOL_CALL_QUOTA_STORE: z.enum(['postgres', 'memory']).default('postgres'),
  // Retention (RetentionPurge): how often each replica purges, rows of each kind per batch, and how many days each kind
  // is kept. Floors keep a typo from emptying a table; the audit log's floor is a year (retention_purge enforces it too).
  RETENTION_PURGE_INTERVAL_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(3_600_000),
  RETENTION_PURGE_BATCH: z.coerce.number().int().min(1).max(10_000).default(1_000),
  RUN_EVENT_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  AGENT_RUN_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(90),
  APPROVAL_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  TOOL_CALL_LEDGER_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).default(30),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(365, 'must be at least 365 (the audit log is kept at least a year)').max(36_500).default(2_555),
  // Login attempts per account (its email) and per client address in a fixed window, counted in PostgreSQL so that every
  // replica spends one allowance: the first slows guessing one account's password, the second one client trying many
  // accounts. A successful login clears its account's count.
  LOGIN_ATTEMPTS_PER_ACCOUNT: z.coerce.number().int().min(1).max(10_000).default(10),
  LOGIN_ATTEMPTS_PER_ADDRESS: z.coerce.number().int().min(1).max(1_000_000).default(100),
  LOGIN_ATTEMPT_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  TRUSTED_PROXIES: trustedProxies.default(''),
  HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  // The interface the API listens on: loopback by default, so a laptop does not publish it; 0.0.0.0 in a container, where
  // the container's own network is the boundary and the port is published (or not) by the platform.
  HTTP_HOST: z.string().trim().min(1, 'must name the interface the API listens on').default('127.0.0.1'),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
});

// The previous keys are checked against their current key: a repeated key id would make a token's key ambiguous.
const checkedServerConfigSchema = serverConfigSchema.superRefine((config, context) => {
  for (const [previous, current] of [
    ['JWT_PREVIOUS_SECRETS', config.JWT_SECRET],
    ['DISPATCH_PREVIOUS_SIGNING_KEYS', config.DISPATCH_SIGNING_KEY],
  ] as const) {
    const problem = previousKeysProblem(config[previous], current);
    if (problem) context.addIssue({ code: 'custom', path: [previous], message: problem });
  }
  // The audit source of a tool call is read from its publisher: the two users must differ, or MCP writes would pass for Rover's.
  if (config.MCP_BROKER_USER === config.WORKER_BROKER_USER) {
    context.addIssue({ code: 'custom', path: ['MCP_BROKER_USER'], message: 'must differ from WORKER_BROKER_USER' });
  }
  // Each MCP session holds a direct run: a bound above the direct runs' own could never be reached.
  if (config.MCP_SESSIONS_PER_USER > config.AGENT_DIRECT_RUNS_PER_USER) {
    context.addIssue({ code: 'custom', path: ['MCP_SESSIONS_PER_USER'], message: 'must be at most AGENT_DIRECT_RUNS_PER_USER (each session holds a direct run)' });
  }
});

export type ServerConfig = z.infer<typeof serverConfigSchema>;

/** Where the run-event notifier LISTENs: DATABASE_LISTEN_URL, or DATABASE_URL when no pooler sits in between. */
export const databaseListenUrl = (config: Pick<ServerConfig, 'DATABASE_URL' | 'DATABASE_LISTEN_URL'>): string =>
  config.DATABASE_LISTEN_URL ?? config.DATABASE_URL;

/** Said after "is missing" for a variable whose value a person cannot guess. */
const MISSING_HINTS: Partial<Record<string, string>> = {
  RUN_SIGNING_KEY: `: the Ed25519 private key that signs run steps, "kid:base64(PKCS8 DER)" (${SIGNING_KEY_HINT}; the worker gets the public half)`,
};

/** Thrown with one line per bad variable, so the process can say exactly what to fix. */
export class ConfigError extends Error {}

export const loadServerConfig = (env: NodeJS.ProcessEnv = process.env): ServerConfig => {
  const parsed = checkedServerConfigSchema.safeParse(env);
  // With NODE_ENV=production, a secret published in the repository (or too short) stops the start like a bad value.
  const secrets = productionSecretProblems(SERVER_PRODUCTION_SECRETS, env).map((problem) => `  ${problem}`);
  if (parsed.success && secrets.length === 0) return parsed.data;
  const issues = parsed.success ? [] : parsed.error.issues;
  const lines = issues.map((issue) => {
    const variable = String(issue.path[0] ?? 'environment');
    const message = env[variable] === undefined ? `is missing${MISSING_HINTS[variable] ?? ''}` : `is invalid: ${issue.message}`;
    return `  ${variable} ${message}`;
  });
  lines.push(...secrets);
  throw new ConfigError(`Invalid server configuration (see .env.example):\n${lines.join('\n')}`);
};

/** The owner's URL, for the setup and seed CLIs: the one place it is required, with what it is for when it is missing. */
export const requireOwnerUrl = (config: Pick<ServerConfig, 'DATABASE_OWNER_URL'>, cli: string): string => {
  if (config.DATABASE_OWNER_URL) return config.DATABASE_OWNER_URL;
  throw new ConfigError(
    `Invalid server configuration (see .env.example):\n  DATABASE_OWNER_URL is missing: ${cli} needs the database owner (migrations, roles, seeding); the running server never does`,
  );
};

export const SERVER_CONFIG = Symbol('SERVER_CONFIG');

const NEST_LEVELS = { error: ['fatal', 'error'], warn: ['fatal', 'error', 'warn'], info: ['fatal', 'error', 'warn', 'log'] } as const;

/** LOG_LEVEL in Nest's terms: each level includes the ones above it. */
export const nestLogLevels = (level: ServerConfig['LOG_LEVEL']): LogLevel[] =>
  level === 'debug' ? [...NEST_LEVELS.info, 'debug'] : [...NEST_LEVELS[level]];

/**
 * LOG_FORMAT and METRICS_PORT / METRICS_HOST, read beside the rest so a bad value stops the process the same way, naming
 * the variable. /metrics may not share HTTP_PORT: the API's port is public, the metrics port is for the monitoring network.
 */
export const loadServerObservability = (
  config: Pick<ServerConfig, 'HTTP_PORT'>,
  env: NodeJS.ProcessEnv = process.env,
): { logFormat: LogFormat; metrics: MetricsConfig | undefined } => {
  try {
    return { logFormat: loadLogFormat(env), metrics: loadMetricsConfig(env, { HTTP_PORT: config.HTTP_PORT }) };
  } catch (error) {
    if (!(error instanceof ObservabilityConfigError)) throw error;
    throw new ConfigError(`Invalid server configuration (see .env.example):\n  ${error.message}`);
  }
};
