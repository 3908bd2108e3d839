import { generateMessageSigningKeyPair } from '@naalya/rmq';
import { describe, expect, it } from 'vitest';
import { WorkerConfigError, enabledLogLevels, loadWorkerConfig, loadWorkerObservability } from './worker-config.js';

const RABBITMQ_URL = 'amqp://worker:s3cret-pass@127.0.0.1:5672';
const CHECKPOINT_DATABASE_URL = 'postgres://naalya_checkpoint:ch3ckpoint-pass@127.0.0.1:5432/naalya';
const CURRENT = generateMessageSigningKeyPair('k2');
const PREVIOUS = generateMessageSigningKeyPair('k1');
const RUN_SIGNING_PUBLIC_KEYS = CURRENT.publicKey;
const REQUIRED = { RABBITMQ_URL, CHECKPOINT_DATABASE_URL, RUN_SIGNING_PUBLIC_KEYS };

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
      agentModelBaseUrl: undefined,
      scriptedStreamDelayMs: 0,
      modelRequests: { maxRetries: 2, timeoutMs: 60_000 },
      health: { port: 3001, host: '127.0.0.1' },
      providerKeys: { OPENAI_API_KEY: undefined, ANTHROPIC_API_KEY: undefined, GOOGLE_API_KEY: undefined, MISTRAL_API_KEY: undefined, GROQ_API_KEY: undefined },
      checkpoint: { databaseUrl: CHECKPOINT_DATABASE_URL, retentionDays: 30 },
      runs: { stepTimeoutMs: 300_000, concurrency: 4, eventLingerMs: 25 },
      runSteps: { serverBrokerUser: 'naalya_server', publicKeys: expect.any(Map) },
      logLevel: 'log',
    });
  });

  it('with NODE_ENV=production refuses a published or short broker or checkpoint password, naming the variable, together with any other problem', () => {
    const error = errorOf({
      ...REQUIRED,
      NODE_ENV: 'production',
      RABBITMQ_URL: 'amqp://naalya_worker:naalya_worker_local@127.0.0.1:5672/naalya',
      TOOL_CALL_TIMEOUT_MS: 'soon',
    });
    expect(error.message).toMatch(/TOOL_CALL_TIMEOUT_MS must be a whole number/);
    expect(error.message).toMatch(/RABBITMQ_URL has a password published in the repository: NODE_ENV is production/);
    expect(error.message).not.toContain('naalya_worker_local');
    // The file's test passwords are shorter than a production password may be.
    expect(errorOf({ ...REQUIRED, NODE_ENV: 'production' }).message).toMatch(/RABBITMQ_URL has a password shorter than 16 characters/);
    const strong = 'p'.repeat(24);
    expect(() =>
      loadWorkerConfig({
        ...REQUIRED,
        NODE_ENV: 'production',
        RABBITMQ_URL: `amqp://worker:${strong}@127.0.0.1:5672`,
        CHECKPOINT_DATABASE_URL: `postgres://naalya_checkpoint:${strong}@127.0.0.1:5432/naalya`,
      }),
    ).not.toThrow();
  });

  it('reads the run step publisher and its public keys, two at once while a key is rotated', () => {
    const config = loadWorkerConfig({ ...REQUIRED, SERVER_BROKER_USER: 'srv', RUN_SIGNING_PUBLIC_KEYS: `${CURRENT.publicKey}, ${PREVIOUS.publicKey}` });
    expect(config.runSteps.serverBrokerUser).toBe('srv');
    expect([...config.runSteps.publicKeys.keys()]).toEqual(['k2', 'k1']);
  });

  it('requires RUN_SIGNING_PUBLIC_KEYS, saying what it is and how to make one, and names what is wrong with a bad one', () => {
    const { RUN_SIGNING_PUBLIC_KEYS: _missing, ...rest } = REQUIRED;
    expect(errorOf(rest).message).toContain(
      'RUN_SIGNING_PUBLIC_KEYS is required: the Ed25519 public keys run steps are verified with, "kid:base64(SPKI DER)[,kid2:...]" (generate a pair with `npm run keys:run-signing`',
    );
    expect(errorOf({ ...REQUIRED, RUN_SIGNING_PUBLIC_KEYS: '' }).message).toContain('RUN_SIGNING_PUBLIC_KEYS is invalid: must be "kid:base64(SPKI DER)[,kid2:...]"');
    // The private half where the public one belongs: refused, and never echoed.
    const { message } = errorOf({ ...REQUIRED, RUN_SIGNING_PUBLIC_KEYS: CURRENT.privateKey });
    expect(message).toContain('RUN_SIGNING_PUBLIC_KEYS is invalid: public key 1 (key id "k2") is not an SPKI DER public key');
    expect(message).not.toContain(CURRENT.privateKey.slice(3, 30));
    expect(errorOf({ ...REQUIRED, RUN_SIGNING_PUBLIC_KEYS: `${CURRENT.publicKey},${CURRENT.publicKey}` }).message).toContain('repeats key id "k2"');
    expect(errorOf({ ...REQUIRED, SERVER_BROKER_USER: ' ' }).message).toContain('SERVER_BROKER_USER must name the broker user');
  });

  it('AGENT_MODEL_BASE_URL is an http(s) URL, empty reads as unset, and a bad one is named without echoing it', () => {
    expect(loadWorkerConfig({ ...REQUIRED, AGENT_MODEL_BASE_URL: 'http://127.0.0.1:8000/v1' }).agentModelBaseUrl).toBe('http://127.0.0.1:8000/v1');
    expect(loadWorkerConfig({ ...REQUIRED, AGENT_MODEL_BASE_URL: '' }).agentModelBaseUrl).toBeUndefined();
    const { message } = errorOf({ ...REQUIRED, AGENT_MODEL_BASE_URL: 'ftp://models.internal/v1' });
    expect(message).toContain('AGENT_MODEL_BASE_URL must be an http:// or https:// URL');
    expect(message).not.toContain('models.internal');
  });

  it('AGENT_MODEL_MAX_RETRIES is 0 to 6 and AGENT_MODEL_TIMEOUT_MS at least a second', () => {
    expect(loadWorkerConfig({ ...REQUIRED, AGENT_MODEL_MAX_RETRIES: '0', AGENT_MODEL_TIMEOUT_MS: '5000' }).modelRequests).toEqual({ maxRetries: 0, timeoutMs: 5_000 });
    expect(errorOf({ ...REQUIRED, AGENT_MODEL_MAX_RETRIES: '7' }).message).toContain('AGENT_MODEL_MAX_RETRIES must be at most 6 (got "7")');
    expect(errorOf({ ...REQUIRED, AGENT_MODEL_TIMEOUT_MS: '10' }).message).toContain('AGENT_MODEL_TIMEOUT_MS must be at least 1000 ms');
  });

  it('WORKER_HEALTH_PORT 0 or empty turns /health and /ready off; a bad port is named', () => {
    expect(loadWorkerConfig({ ...REQUIRED, WORKER_HEALTH_PORT: '0' }).health).toBeUndefined();
    expect(loadWorkerConfig({ ...REQUIRED, WORKER_HEALTH_PORT: '' }).health).toBeUndefined();
    expect(loadWorkerConfig({ ...REQUIRED, WORKER_HEALTH_PORT: '4101', WORKER_HEALTH_HOST: '0.0.0.0' }).health).toEqual({ port: 4101, host: '0.0.0.0' });
    expect(errorOf({ ...REQUIRED, WORKER_HEALTH_PORT: '70000' }).message).toContain('WORKER_HEALTH_PORT must be at most 65535');
    expect(errorOf({ ...REQUIRED, WORKER_HEALTH_PORT: 'http' }).message).toContain('WORKER_HEALTH_PORT must be a port number, or 0 or empty for none');
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
      AGENT_SCRIPTED_STREAM_DELAY_MS: '25',
      LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({ toolCallTimeoutMs: 2500, agentModel: 'openai:gpt-4.1', scriptedStreamDelayMs: 25, logLevel: 'debug' });
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
    expect(errorOf({ RABBITMQ_URL, RUN_SIGNING_PUBLIC_KEYS }).message).toContain('CHECKPOINT_DATABASE_URL is required');
    const { message } = errorOf({ RABBITMQ_URL, RUN_SIGNING_PUBLIC_KEYS, CHECKPOINT_DATABASE_URL: 'mysql://naalya_checkpoint:ch3ckpoint-pass@db/naalya' });
    expect(message).toContain('CHECKPOINT_DATABASE_URL must be a postgres:// URL');
    expect(message).not.toContain('ch3ckpoint-pass');
  });

  it.each([
    ['CHECKPOINT_RETENTION_DAYS', '0', 'must be at least 1 days'],
    ['CHECKPOINT_RETENTION_DAYS', 'forever', 'must be a whole number of days'],
    ['RUN_STEP_TIMEOUT_MS', '10', 'must be at least 1000 ms'],
    ['RUN_CONCURRENCY', '0', 'must be at least 1'],
    ['AGENT_SCRIPTED_STREAM_DELAY_MS', '1001', 'must be at most 1000 ms'],
    ['AGENT_SCRIPTED_STREAM_DELAY_MS', '-5', 'must be a whole number of ms'],
    ['AGENT_SCRIPTED_STREAM_DELAY_MS', 'slow', 'must be a whole number of ms'],
  ])('refuses %s=%j', (variable, value, reason) => {
    expect(errorOf({ ...REQUIRED, [variable]: value }).message).toContain(`${variable} ${reason} (got "${value}")`);
  });

  it('reads an empty provider key (OPENAI_API_KEY= in a .env file) as unset', () => {
    expect(loadWorkerConfig({ ...REQUIRED, OPENAI_API_KEY: ' ' }).providerKeys['OPENAI_API_KEY']).toBeUndefined();
  });

  it('refuses a RABBITMQ_URL that is not amqp, without echoing its password', () => {
    const { message } = errorOf({ CHECKPOINT_DATABASE_URL, RUN_SIGNING_PUBLIC_KEYS, RABBITMQ_URL: 'http://worker:s3cret-pass@127.0.0.1:5672' });
    expect(message).toContain('RABBITMQ_URL must be an amqp:// or amqps:// URL');
    expect(message).not.toContain('s3cret-pass');
  });

  it('takes RABBITMQ_URL as a comma-separated list of cluster nodes', () => {
    const nodes = 'amqp://worker:s3cret-pass@127.0.0.1:5681,amqp://worker:s3cret-pass@127.0.0.1:5682';
    expect(loadWorkerConfig({ ...REQUIRED, RABBITMQ_URL: nodes }).rabbitmqUrl).toBe(nodes);
  });

  it('names the position of a bad node in RABBITMQ_URL without echoing its password', () => {
    const { message } = errorOf({ ...REQUIRED, RABBITMQ_URL: 'amqp://worker:s3cret-pass@127.0.0.1:5681,,amqp://worker:s3cret-pass@127.0.0.1:5683' });
    expect(message).toContain('RABBITMQ_URL entry 2 of 3 is empty');
    expect(message).not.toContain('s3cret-pass');
  });
});

describe('enabledLogLevels', () => {
  it('enables the chosen level and every more severe one', () => {
    expect(enabledLogLevels('warn')).toEqual(['fatal', 'error', 'warn']);
    expect(enabledLogLevels('verbose')).toHaveLength(6);
  });
});

describe('loadWorkerObservability', () => {
  const health = { port: 3001, host: '127.0.0.1' };

  it('reads LOG_FORMAT (json in production unless set) and METRICS_PORT / METRICS_HOST', () => {
    expect(loadWorkerObservability({}, { health })).toEqual({ logFormat: 'pretty', metrics: undefined });
    expect(loadWorkerObservability({ NODE_ENV: 'production', METRICS_PORT: '9465' }, { health })).toEqual({
      logFormat: 'json',
      metrics: { host: '127.0.0.1', port: 9465 },
    });
  });

  it('refuses, naming the variable, a LOG_FORMAT it does not know and /metrics on the health port', () => {
    expect(() => loadWorkerObservability({ LOG_FORMAT: 'yaml' }, { health })).toThrow(
      new WorkerConfigError('Invalid worker configuration:\n  - LOG_FORMAT must be one of json, pretty (got "yaml")'),
    );
    expect(() => loadWorkerObservability({ METRICS_PORT: '3001' }, { health })).toThrow(/METRICS_PORT must differ from WORKER_HEALTH_PORT \(3001\)/);
    // No health endpoint: any port will do.
    expect(loadWorkerObservability({ METRICS_PORT: '3001' }, { health: undefined }).metrics).toEqual({ host: '127.0.0.1', port: 3001 });
  });
});
