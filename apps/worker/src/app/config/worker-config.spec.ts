import { describe, expect, it } from 'vitest';
import { WorkerConfigError, enabledLogLevels, loadWorkerConfig } from './worker-config.js';

const RABBITMQ_URL = 'amqp://worker:s3cret-pass@127.0.0.1:5672';
const CHECKPOINT_DATABASE_URL = 'postgres://naalya_checkpoint:ch3ckpoint-pass@127.0.0.1:5432/naalya';
const REQUIRED = { RABBITMQ_URL, CHECKPOINT_DATABASE_URL };

const errorOf = (env: Record<string, string | undefined>): WorkerConfigError => {
  try {
    loadWorkerConfig(env);
  } catch (error) {
    if (error instanceof WorkerConfigError) return error;
    throw error;
  }
  throw new Error('expected the configuration to be refused');
};

describe('loadWorkerConfig', () => {
  it('applies the defaults', () => {
    expect(loadWorkerConfig(REQUIRED)).toEqual({
      rabbitmqUrl: RABBITMQ_URL,
      queues: {
        toolsQueue: 'agent-tools',
        toolsExchange: 'agent-tools.calls',
        runsQueue: 'agent-runs',
        runEventsExchange: 'agent-runs.events',
        deadLetterExchange: 'agent-tools.dlx',
        deadLetterQueue: 'agent-tools.dead-letter',
      },
      toolCallTimeoutMs: 15_000,
      agentModel: 'scripted',
      providerKeys: { OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined, GOOGLE_API_KEY: undefined, MISTRAL_API_KEY: undefined, GROQ_API_KEY: undefined },
      checkpoint: { databaseUrl: CHECKPOINT_DATABASE_URL, retentionDays: 30 },
      runs: { stepTimeoutMs: 300_000, concurrency: 4 },
      logLevel: 'log',
    });
  });

  it('reads every worker variable', () => {
    const config = loadWorkerConfig({
      ...REQUIRED,
      CHECKPOINT_RETENTION_DAYS: '7',
      RUN_STEP_TIMEOUT_MS: '60000',
      RUN_CONCURRENCY: '2',
      OPENAI_API_KEY: 'sk-test',
      AGENT_TOOLS_QUEUE: 'tools-x',
      AGENT_RUNS_QUEUE: 'runs-x',
      TOOL_CALL_TIMEOUT_MS: '2500',
      AGENT_MODEL: 'openai:gpt-4.1',
      LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({ toolCallTimeoutMs: 2500, agentModel: 'openai:gpt-4.1', logLevel: 'debug' });
    expect(config.queues).toMatchObject({ toolsQueue: 'tools-x', runsQueue: 'runs-x' });
    expect(config).toMatchObject({ checkpoint: { retentionDays: 7 }, runs: { stepTimeoutMs: 60_000, concurrency: 2 } });
    expect(config.providerKeys['OPENAI_API_KEY']).toBe('sk-test');
  });

  it("holds no server secret: a server DATABASE_URL or JWT_SECRET in the environment is not read", () => {
    const config = loadWorkerConfig({ ...REQUIRED, DATABASE_URL: 'postgres://app@db/naalya', JWT_SECRET: 'server-only' });
    expect(JSON.stringify(config)).not.toMatch(/postgres:\/\/app@db|server-only/);
  });

  it.each([
    ['abc', 'must be a whole number of milliseconds'],
    ['1.5', 'must be a whole number of milliseconds'],
    ['', 'must be a whole number of milliseconds'],
    ['50', 'must be at least 100 ms'],
    ['9999999', 'must be at most 300000 ms'],
  ])('refuses TOOL_CALL_TIMEOUT_MS=%j, naming the variable and the value', (value, reason) => {
    expect(errorOf({ ...REQUIRED, TOOL_CALL_TIMEOUT_MS: value }).message).toContain(
      `TOOL_CALL_TIMEOUT_MS ${reason} (got "${value}")`,
    );
  });

  it('names each bad variable in one message', () => {
    const { message } = errorOf({ TOOL_CALL_TIMEOUT_MS: 'soon', LOG_LEVEL: 'loud', AGENT_MODEL: 'gpt 4', AGENT_TOOLS_QUEUE: 'a b' });
    expect(message).toMatch(/^Invalid worker configuration:/);
    for (const variable of ['RABBITMQ_URL is required', 'TOOL_CALL_TIMEOUT_MS', 'LOG_LEVEL', 'AGENT_MODEL', 'AGENT_TOOLS_QUEUE']) {
      expect(message).toContain(variable);
    }
  });

  it('requires CHECKPOINT_DATABASE_URL and refuses one that is not postgres, without echoing its password', () => {
    expect(errorOf({ RABBITMQ_URL }).message).toContain('CHECKPOINT_DATABASE_URL is required');
    const { message } = errorOf({ RABBITMQ_URL, CHECKPOINT_DATABASE_URL: 'mysql://naalya_checkpoint:ch3ckpoint-pass@db/naalya' });
    expect(message).toContain('CHECKPOINT_DATABASE_URL must be a postgres:// URL');
    expect(message).not.toContain('ch3ckpoint-pass');
  });

  it.each([
    ['CHECKPOINT_RETENTION_DAYS', '0', 'must be at least 1 days'],
    ['CHECKPOINT_RETENTION_DAYS', 'forever', 'must be a whole number of days'],
    ['RUN_STEP_TIMEOUT_MS', '10', 'must be at least 1000 ms'],
    ['RUN_CONCURRENCY', '0', 'must be at least 1'],
  ])('refuses %s=%j', (variable, value, reason) => {
    expect(errorOf({ ...REQUIRED, [variable]: value }).message).toContain(`${variable} ${reason} (got "${value}")`);
  });

  it('reads an empty provider key (OPENAI_API_KEY= in a .env file) as unset', () => {
    expect(loadWorkerConfig({ ...REQUIRED, OPENAI_API_KEY: ' ' }).providerKeys['OPENAI_API_KEY']).toBeUndefined();
  });

  it('refuses a RABBITMQ_URL that is not amqp, without echoing its password', () => {
    const { message } = errorOf({ CHECKPOINT_DATABASE_URL, RABBITMQ_URL: 'http://worker:s3cret-pass@127.0.0.1:5672' });
    expect(message).toContain('RABBITMQ_URL must be an amqp:// or amqps:// URL');
    expect(message).not.toContain('s3cret-pass');
  });
});

describe('enabledLogLevels', () => {
  it('enables the chosen level and every more severe one', () => {
    expect(enabledLogLevels('warn')).toEqual(['fatal', 'error', 'warn']);
    expect(enabledLogLevels('verbose')).toHaveLength(6);
  });
});
