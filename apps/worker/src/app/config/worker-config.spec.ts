import { describe, expect, it } from 'vitest';
import { WorkerConfigError, enabledLogLevels, loadWorkerConfig } from './worker-config.js';

const RABBITMQ_URL = 'amqp://worker:s3cret-pass@127.0.0.1:5672';

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
    expect(loadWorkerConfig({ RABBITMQ_URL })).toEqual({
      rabbitmqUrl: RABBITMQ_URL,
      queues: {
        toolsQueue: 'agent-tools',
        runsQueue: 'agent-runs',
        runEventsExchange: 'agent-runs.events',
        deadLetterExchange: 'agent-tools.dlx',
        deadLetterQueue: 'agent-tools.dead-letter',
      },
      toolCallTimeoutMs: 15_000,
      agentModel: 'scripted',
      logLevel: 'log',
    });
  });

  it('reads every worker variable', () => {
    const config = loadWorkerConfig({
      RABBITMQ_URL,
      AGENT_TOOLS_QUEUE: 'tools-x',
      AGENT_RUNS_QUEUE: 'runs-x',
      TOOL_CALL_TIMEOUT_MS: '2500',
      AGENT_MODEL: 'openai:gpt-4.1',
      LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({ toolCallTimeoutMs: 2500, agentModel: 'openai:gpt-4.1', logLevel: 'debug' });
    expect(config.queues).toMatchObject({ toolsQueue: 'tools-x', runsQueue: 'runs-x' });
  });

  it("holds no server secret: a server DATABASE_URL or JWT_SECRET in the environment is not read", () => {
    const config = loadWorkerConfig({ RABBITMQ_URL, DATABASE_URL: 'postgres://app@db/naalya', JWT_SECRET: 'server-only' });
    expect(JSON.stringify(config)).not.toMatch(/postgres|server-only/);
  });

  it.each([
    ['abc', 'must be a whole number of milliseconds'],
    ['1.5', 'must be a whole number of milliseconds'],
    ['', 'must be a whole number of milliseconds'],
    ['50', 'must be at least 100 ms'],
    ['9999999', 'must be at most 300000 ms'],
  ])('refuses TOOL_CALL_TIMEOUT_MS=%j, naming the variable and the value', (value, reason) => {
    expect(errorOf({ RABBITMQ_URL, TOOL_CALL_TIMEOUT_MS: value }).message).toContain(
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

  it('refuses a RABBITMQ_URL that is not amqp, without echoing its password', () => {
    const { message } = errorOf({ RABBITMQ_URL: 'http://worker:s3cret-pass@127.0.0.1:5672' });
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
