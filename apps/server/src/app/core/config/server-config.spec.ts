import { describe, expect, it } from 'vitest';
import { VALID_SERVER_RUN_KEYS as RUN_KEYS, VALID_SERVER_ENV as VALID } from '../../../testing/server-env.js';
import { ConfigError, loadServerConfig, loadServerObservability, requireOwnerUrl } from './server-config.js';

describe('loadServerConfig', () => {
  it('accepts a complete environment and applies defaults', () => {
    expect(loadServerConfig(VALID)).toMatchObject({ HTTP_PORT: 3000, DATABASE_POOL_SIZE: 8, AGENT_TOOLS_QUEUE: 'agent-tools' });
  });

  it('listens on loopback unless HTTP_HOST says otherwise (0.0.0.0 in a container)', () => {
    expect(loadServerConfig(VALID).HTTP_HOST).toBe('127.0.0.1');
    expect(loadServerConfig({ ...VALID, HTTP_HOST: '0.0.0.0' }).HTTP_HOST).toBe('0.0.0.0');
    expect(() => loadServerConfig({ ...VALID, HTTP_HOST: ' ' })).toThrow(/HTTP_HOST is invalid: must name the interface the API listens on/);
  });

  it('the server starts without the owner URL; only the setup and seed CLIs require it, saying so', () => {
    const { DATABASE_OWNER_URL: _owner, ...withoutOwner } = VALID;
    const config = loadServerConfig(withoutOwner);
    expect(config.DATABASE_OWNER_URL).toBeUndefined();
    expect(() => requireOwnerUrl(config, 'db:setup')).toThrow(ConfigError);
    expect(() => requireOwnerUrl(config, 'db:setup')).toThrow(/DATABASE_OWNER_URL is missing: db:setup needs the database owner .*; the running server never does/);
    expect(requireOwnerUrl(loadServerConfig(VALID), 'db:seed')).toBe(VALID.DATABASE_OWNER_URL);
    expect(() => loadServerConfig({ ...VALID, DATABASE_OWNER_URL: 'mysql://x' })).toThrow(/DATABASE_OWNER_URL is invalid/);
  });

  it('with NODE_ENV=production refuses the secrets .env.example publishes, naming each variable and never its value', () => {
    const published = {
      ...VALID,
      NODE_ENV: 'production',
      JWT_SECRET: 'local-development-secret-change-me-0123456789',
      DATABASE_URL: 'postgres://naalya_app:naalya_app_local@127.0.0.1:5432/naalya',
    };
    expect(() => loadServerConfig(published)).toThrow(ConfigError);
    const message = (() => {
      try {
        loadServerConfig(published);
      } catch (error) {
        return (error as Error).message;
      }
      return '';
    })();
    expect(message).toMatch(/JWT_SECRET is a value published in the repository: NODE_ENV is production/);
    expect(message).toMatch(/DATABASE_URL has a password published in the repository/);
    expect(message).not.toContain('local-development-secret');
    expect(message).not.toContain('naalya_app_local');
    const strong = 'p'.repeat(24);
    const own = { ...VALID, NODE_ENV: 'production', DATABASE_URL: `postgres://naalya_app:${strong}@db/naalya`, RABBITMQ_URL: `amqp://naalya_server:${strong}@mq` };
    expect(loadServerConfig(own).JWT_SECRET).toBe(VALID.JWT_SECRET);
  });

  it('refuses to start without a dispatch signing key of at least 32 characters', () => {
    const { DISPATCH_SIGNING_KEY: _missing, ...rest } = VALID;
    expect(() => loadServerConfig(rest)).toThrow(/DISPATCH_SIGNING_KEY is missing/);
    expect(() => loadServerConfig({ ...VALID, DISPATCH_SIGNING_KEY: 'short' })).toThrow(/DISPATCH_SIGNING_KEY is invalid: must be at least 32 characters/);
  });

  it('refuses to start without an Ed25519 run signing key, naming the variable and saying how to make one, never echoing it', () => {
    const { RUN_SIGNING_KEY: _missing, ...rest } = VALID;
    expect(() => loadServerConfig(rest)).toThrow(/RUN_SIGNING_KEY is missing: the Ed25519 private key that signs run steps, "kid:base64\(PKCS8 DER\)" \(generate a pair with `npm run keys:run-signing`/);
    expect(() => loadServerConfig({ ...VALID, RUN_SIGNING_KEY: '' })).toThrow(/RUN_SIGNING_KEY is invalid: must be "kid:base64\(PKCS8 DER\)" of an Ed25519 private key, and is empty/);
    // The public half where the private key belongs: a mistake easy to make when copying the pair.
    expect(() => loadServerConfig({ ...VALID, RUN_SIGNING_KEY: RUN_KEYS.publicKey })).toThrow(/RUN_SIGNING_KEY is invalid: the private key \(key id "k1"\) is not a PKCS8 DER private key/);
    const noKid = RUN_KEYS.privateKey.slice(3);
    const error = (() => {
      try {
        loadServerConfig({ ...VALID, RUN_SIGNING_KEY: noKid });
      } catch (caught) {
        return caught as Error;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toMatch(/RUN_SIGNING_KEY is invalid: the private key must be "kid:base64", with a key id before the colon/);
    expect(error.message).not.toContain(noKid.slice(0, 24));
    expect(loadServerConfig(VALID).RUN_SIGNING_KEY).toBe(RUN_KEYS.privateKey);
  });

  it('the run events prefetch defaults to 256 and is bounded: 1 to 4096 whole messages', () => {
    expect(loadServerConfig(VALID).RUN_EVENTS_PREFETCH).toBe(256);
    expect(loadServerConfig({ ...VALID, RUN_EVENTS_PREFETCH: '4096' }).RUN_EVENTS_PREFETCH).toBe(4096);
    for (const refused of ['0', '4097', '2.5', 'many']) {
      expect(() => loadServerConfig({ ...VALID, RUN_EVENTS_PREFETCH: refused })).toThrow(/RUN_EVENTS_PREFETCH is invalid/);
    }
  });

  it('an approval lives TOOL_APPROVAL_TTL_SECONDS, 900 unless set; a value under a minute, over a day or not a whole number is refused, naming the variable', () => {
    expect(loadServerConfig(VALID).TOOL_APPROVAL_TTL_SECONDS).toBe(900);
    expect(loadServerConfig({ ...VALID, TOOL_APPROVAL_TTL_SECONDS: '120' }).TOOL_APPROVAL_TTL_SECONDS).toBe(120);
    for (const refused of ['59', '86401', '2.5', 'soon', '-1']) {
      expect(() => loadServerConfig({ ...VALID, TOOL_APPROVAL_TTL_SECONDS: refused })).toThrow(/TOOL_APPROVAL_TTL_SECONDS is invalid/);
    }
  });

  it('the MCP door\'s bounds: calls a minute per token, sessions per person (at most their direct runs) and the idle timeout, each refused out of range naming the variable', () => {
    expect(loadServerConfig(VALID)).toMatchObject({ MCP_CALLS_PER_MINUTE_PER_TOKEN: 60, MCP_SESSIONS_PER_USER: 5, MCP_SESSION_IDLE_SECONDS: 1800 });
    for (const [name, refused] of [
      ['MCP_CALLS_PER_MINUTE_PER_TOKEN', '0'],
      ['MCP_SESSIONS_PER_USER', '0'],
      ['MCP_SESSIONS_PER_USER', 'many'],
      ['MCP_SESSION_IDLE_SECONDS', '59'],
      ['MCP_SESSION_IDLE_SECONDS', '86401'],
    ]) {
      expect(() => loadServerConfig({ ...VALID, [name]: refused })).toThrow(new RegExp(`${name} is invalid`));
    }
    expect(() => loadServerConfig({ ...VALID, MCP_SESSIONS_PER_USER: '6', AGENT_DIRECT_RUNS_PER_USER: '5' })).toThrow(
      /MCP_SESSIONS_PER_USER is invalid: must be at most AGENT_DIRECT_RUNS_PER_USER/,
    );
  });

  it('every model may see a school\'s data by default; AGENT_MODELS_ALLOWED takes "*", "none" or provider and provider:model entries', () => {
    expect(loadServerConfig(VALID).AGENT_MODELS_ALLOWED).toBe('*');
    expect(loadServerConfig({ ...VALID, AGENT_MODELS_ALLOWED: 'none' }).AGENT_MODELS_ALLOWED).toEqual([]);
    expect(loadServerConfig({ ...VALID, AGENT_MODELS_ALLOWED: ' OpenAI , anthropic:claude-sonnet-4-5,ollama:llama3.1:8b ' }).AGENT_MODELS_ALLOWED).toEqual([
      'openai',
      'anthropic:claude-sonnet-4-5',
      'ollama:llama3.1:8b',
    ]);
  });

  it('refuses a malformed AGENT_MODELS_ALLOWED with a sentence naming the variable and the syntax', () => {
    for (const refused of ['', 'openai gpt', 'openai,*', ':gpt-4.1', 'openai:']) {
      expect(() => loadServerConfig({ ...VALID, AGENT_MODELS_ALLOWED: refused })).toThrow(
        /AGENT_MODELS_ALLOWED is invalid: must be "\*" \(every model\), "none", or a comma-separated list of "provider" or "provider:model" entries/,
      );
    }
  });

  it('the school daily token budget is off unless set; the step budget is 200000 unless set, 0 or empty turning it off', () => {
    expect(loadServerConfig(VALID)).toMatchObject({ AGENT_SCHOOL_DAILY_TOKEN_BUDGET: null, AGENT_STEP_TOKEN_BUDGET: 200_000 });
    expect(loadServerConfig({ ...VALID, AGENT_SCHOOL_DAILY_TOKEN_BUDGET: '' }).AGENT_SCHOOL_DAILY_TOKEN_BUDGET).toBeNull();
    expect(loadServerConfig({ ...VALID, AGENT_SCHOOL_DAILY_TOKEN_BUDGET: '500000' }).AGENT_SCHOOL_DAILY_TOKEN_BUDGET).toBe(500_000);
    expect(loadServerConfig({ ...VALID, AGENT_STEP_TOKEN_BUDGET: '0' }).AGENT_STEP_TOKEN_BUDGET).toBe(0);
    expect(loadServerConfig({ ...VALID, AGENT_STEP_TOKEN_BUDGET: '' }).AGENT_STEP_TOKEN_BUDGET).toBe(0);
    for (const [variable, refused] of [['AGENT_SCHOOL_DAILY_TOKEN_BUDGET', '0'], ['AGENT_SCHOOL_DAILY_TOKEN_BUDGET', 'lots'], ['AGENT_STEP_TOKEN_BUDGET', '-1'], ['AGENT_STEP_TOKEN_BUDGET', '1.5']]) {
      expect(() => loadServerConfig({ ...VALID, [variable]: refused })).toThrow(new RegExp(`${variable} is invalid`));
    }
  });

  it('names a missing variable', () => {
    const { DATABASE_URL: _missing, ...rest } = VALID;
    expect(() => loadServerConfig(rest)).toThrow(ConfigError);
    expect(() => loadServerConfig(rest)).toThrow(/DATABASE_URL is missing/);
  });

  it('names each invalid variable with the reason', () => {
    const error = (() => {
      try {
        loadServerConfig({ ...VALID, JWT_SECRET: 'short', HTTP_PORT: 'eighty', RABBITMQ_URL: 'http://broker' });
      } catch (caught) {
        return caught as Error;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(error.message).toMatch(/JWT_SECRET is invalid: must be at least 32 characters/);
    expect(error.message).toMatch(/HTTP_PORT is invalid/);
    expect(error.message).toMatch(/RABBITMQ_URL is invalid: must be an amqp:\/\/ or amqps:\/\/ URL/);
  });

  it('takes RABBITMQ_URL as a comma-separated list of cluster nodes', () => {
    const nodes = 'amqp://guest:guest@127.0.0.1:5681, amqp://guest:guest@127.0.0.1:5682,amqp://guest:guest@127.0.0.1:5683';
    expect(loadServerConfig({ ...VALID, RABBITMQ_URL: nodes }).RABBITMQ_URL).toBe(nodes);
  });

  it('names the position of a bad node in RABBITMQ_URL without echoing any password', () => {
    const nodes = 'amqp://naalya_server:s3cret-pass@10.0.0.1:5672,http://naalya_server:s3cret-pass@10.0.0.2:5672';
    expect(() => loadServerConfig({ ...VALID, RABBITMQ_URL: nodes })).toThrow(/RABBITMQ_URL is invalid: entry 2 of 2 must be an amqp:\/\/ or amqps:\/\/ URL/);
    expect(() => loadServerConfig({ ...VALID, RABBITMQ_URL: nodes })).not.toThrow(/s3cret-pass/);
  });

  it('refuses RABBITMQ_QUEUE_TYPE other than classic or quorum, and defaults to classic', () => {
    expect(loadServerConfig(VALID).RABBITMQ_QUEUE_TYPE).toBe('classic');
    expect(loadServerConfig({ ...VALID, RABBITMQ_QUEUE_TYPE: 'quorum' }).RABBITMQ_QUEUE_TYPE).toBe('quorum');
    expect(() => loadServerConfig({ ...VALID, RABBITMQ_QUEUE_TYPE: 'stream' })).toThrow(/RABBITMQ_QUEUE_TYPE is invalid/);
  });

  it('retention: defaults for every kind, and refuses an audit retention under a year or a period under a day, naming the variable', () => {
    expect(loadServerConfig(VALID)).toMatchObject({
      RETENTION_PURGE_INTERVAL_MS: 3_600_000,
      RETENTION_PURGE_BATCH: 1_000,
      RUN_EVENT_RETENTION_DAYS: 30,
      AGENT_RUN_RETENTION_DAYS: 90,
      APPROVAL_RETENTION_DAYS: 30,
      TOOL_CALL_LEDGER_RETENTION_DAYS: 30,
      AUDIT_RETENTION_DAYS: 2_555,
    });
    expect(loadServerConfig({ ...VALID, AUDIT_RETENTION_DAYS: '365' }).AUDIT_RETENTION_DAYS).toBe(365);
    expect(() => loadServerConfig({ ...VALID, AUDIT_RETENTION_DAYS: '364' })).toThrow(/AUDIT_RETENTION_DAYS is invalid: must be at least 365/);
    for (const name of ['RUN_EVENT_RETENTION_DAYS', 'AGENT_RUN_RETENTION_DAYS', 'APPROVAL_RETENTION_DAYS', 'TOOL_CALL_LEDGER_RETENTION_DAYS', 'RETENTION_PURGE_BATCH']) {
      expect(() => loadServerConfig({ ...VALID, [name]: '0' }), name).toThrow(new RegExp(`${name} is invalid`));
      expect(() => loadServerConfig({ ...VALID, [name]: 'soon' }), name).toThrow(new RegExp(`${name} is invalid`));
    }
    expect(() => loadServerConfig({ ...VALID, RETENTION_PURGE_INTERVAL_MS: '10' })).toThrow(/RETENTION_PURGE_INTERVAL_MS is invalid/);
  });
});

describe('loadServerObservability', () => {
  const refusal = (env: NodeJS.ProcessEnv, httpPort = 3000): string => {
    try {
      loadServerObservability({ HTTP_PORT: httpPort }, env);
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error('expected a refusal');
  };

  it('reads LOG_FORMAT (json in production unless set) and METRICS_PORT / METRICS_HOST', () => {
    expect(loadServerObservability({ HTTP_PORT: 3000 }, {})).toEqual({ logFormat: 'pretty', metrics: undefined });
    expect(loadServerObservability({ HTTP_PORT: 3000 }, { NODE_ENV: 'production', METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' })).toEqual({
      logFormat: 'json',
      metrics: { host: '0.0.0.0', port: 9464 },
    });
  });

  it('refuses, naming the variable, a LOG_FORMAT it does not know and /metrics on the API port', () => {
    expect(refusal({ LOG_FORMAT: 'text' })).toBe('Invalid server configuration (see .env.example):\n  LOG_FORMAT must be one of json, pretty (got "text")');
    expect(refusal({ METRICS_PORT: '3000' })).toContain('METRICS_PORT must differ from HTTP_PORT (3000)');
    expect(refusal({ METRICS_PORT: 'ninety' })).toContain('METRICS_PORT must be a port number');
  });
});
