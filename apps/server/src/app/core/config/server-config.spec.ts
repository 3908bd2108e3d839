import { describe, expect, it } from 'vitest';
import { ConfigError, loadServerConfig } from './server-config.js';

const VALID = {
  DATABASE_URL: 'postgres://naalya_app:secret@127.0.0.1:5432/naalya',
  DATABASE_OWNER_URL: 'postgres://postgres@127.0.0.1:5432/naalya',
  RABBITMQ_URL: 'amqp://guest:guest@127.0.0.1:5672',
  JWT_SECRET: 'x'.repeat(40),
  DISPATCH_SIGNING_KEY: 'd'.repeat(40),
};

describe('loadServerConfig', () => {
  it('accepts a complete environment and applies defaults', () => {
    expect(loadServerConfig(VALID)).toMatchObject({ HTTP_PORT: 3000, DATABASE_POOL_SIZE: 8, AGENT_TOOLS_QUEUE: 'agent-tools' });
  });

  it('refuses to start without a dispatch signing key of at least 32 characters', () => {
    const { DISPATCH_SIGNING_KEY: _missing, ...rest } = VALID;
    expect(() => loadServerConfig(rest)).toThrow(/DISPATCH_SIGNING_KEY is missing/);
    expect(() => loadServerConfig({ ...VALID, DISPATCH_SIGNING_KEY: 'short' })).toThrow(/DISPATCH_SIGNING_KEY is invalid: must be at least 32 characters/);
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
    expect(error.message).toMatch(/RABBITMQ_URL is invalid: must be an amqp:\/\/ URL/);
  });
});
