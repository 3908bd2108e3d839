import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { generateMessageSigningKeyPair } from '@naalya/rmq';
import { DataSource } from 'typeorm';
import { AppModule } from '../app/app.module.js';
import type { ServerConfig } from '../app/core/config/server-config.js';
import { createOwnerDataSource } from '../app/core/database/data-source.js';
import { seedDemo, type DemoData } from '../app/seed/demo-seed.js';
import { useStrictBodyParsers } from '../app/core/http/hostile-input.js';
import { StrayQueryLogger } from '../app/core/database/stray-query.logger.js';
import { TEST_DISPATCH_SIGNING_KEY, ensureDispatchRuns } from './dispatch-envelope.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

export type TestApp = {
  app: INestApplication;
  module: TestingModule;
  database: TestDatabase;
  demo: DemoData;
  /** The owner's connection: reads every school's rows (superuser) to check what a call did or did not change. */
  owner: DataSource;
  /** Queries a call ran outside its unit of work's connection. */
  strays: () => string[];
  close: () => Promise<void>;
};

/** The run signing pair of this test process: the server signs run steps with its private half. */
export const TEST_RUN_SIGNING_KEYS = generateMessageSigningKeyPair('test');

export const testConfig = (database: TestDatabase, overrides: Partial<ServerConfig> = {}): ServerConfig => ({
  DATABASE_URL: database.appUrl,
  // No DATABASE_OWNER_URL: the running server is never given the owner, and every suite proves it needs none.
  DATABASE_POOL_SIZE: 4,
  DATABASE_STATEMENT_TIMEOUT_MS: 10_000,
  RABBITMQ_URL: 'amqp://guest:guest@127.0.0.1:5672',
  RABBITMQ_QUEUE_TYPE: 'classic',
  AGENT_TOOLS_QUEUE: 'agent-tools',
  AGENT_RUNS_QUEUE: 'agent-runs',
  JWT_SECRET: 'test-secret-test-secret-test-secret-0000',
  JWT_PREVIOUS_SECRETS: '',
  JWT_TTL_SECONDS: 3600,
  DISPATCH_SIGNING_KEY: TEST_DISPATCH_SIGNING_KEY,
  DISPATCH_PREVIOUS_SIGNING_KEYS: '',
  DISPATCH_TOKEN_TTL_SECONDS: 3600,
  RUN_SIGNING_KEY: TEST_RUN_SIGNING_KEYS.privateKey,
  // Tests publish as guest, like the worker's test client.
  WORKER_BROKER_USER: 'guest',
  // The MCP door's suite creates this broker user; other suites never start the door's publisher.
  MCP_BROKER_USER: 'naalya_test_mcp',
  MCP_RESOURCE_URL: 'http://127.0.0.1:3000/mcp',
  MCP_TOKENS_PER_USER: 20,
  MCP_TOKEN_MAX_DAYS: 90,
  MCP_CALLS_PER_MINUTE_PER_TOKEN: 1_000,
  MCP_SESSIONS_PER_USER: 50,
  MCP_SESSION_IDLE_SECONDS: 1_800,
  // Suites make hundreds of calls a minute as one persona; the quota test sets its own limits.
  TOOL_CALLS_PER_MINUTE_PER_SCHOOL: 1_000_000,
  TOOL_CALLS_PER_MINUTE_PER_USER: 1_000_000,
  TOOL_CALL_QUOTA_STORE: 'postgres',
  TOOL_HANDLER_TIMEOUT_MS: 30_000,
  AGENT_RUN_LEASE_SECONDS: 30,
  AGENT_RUN_MAX_ATTEMPTS: 3,
  // Suites that test the sweeper call sweep() themselves; the timer stays out of their way.
  AGENT_RUN_SWEEP_INTERVAL_MS: 600_000,
  AGENT_RUN_QUEUE_LIMIT: 5,
  RUN_EVENTS_PREFETCH: 256,
  AGENT_QUESTION_TTL_SECONDS: 86_400,
  TOOL_APPROVAL_TTL_SECONDS: 900,
  AGENT_DIRECT_RUNS_PER_USER: 1_000,
  // Suites start many threads and runs as one persona; the limits suite sets its own.
  AGENT_THREADS_PER_USER: 1_000_000,
  AGENT_RUNS_IN_FLIGHT_PER_USER: 1_000,
  AGENT_EVENT_STREAMS_PER_USER: 1_000,
  AGENT_MODELS_ALLOWED: '*',
  AGENT_SCHOOL_DAILY_TOKEN_BUDGET: null,
  AGENT_STEP_TOKEN_BUDGET: 200_000,
  SHUTDOWN_DRAIN_TIMEOUT_MS: 5_000,
  // Suites that test retention call purge() themselves; the timer never fires during a test file.
  RETENTION_PURGE_INTERVAL_MS: 86_400_000,
  RETENTION_PURGE_BATCH: 1_000,
  RUN_EVENT_RETENTION_DAYS: 30,
  AGENT_RUN_RETENTION_DAYS: 90,
  APPROVAL_RETENTION_DAYS: 30,
  TOOL_CALL_LEDGER_RETENTION_DAYS: 30,
  AUDIT_RETENTION_DAYS: 365,
  // Suites log in as the demo personas many times from one address; the login-limits suite sets its own.
  LOGIN_ATTEMPTS_PER_ACCOUNT: 10_000,
  LOGIN_ATTEMPTS_PER_ADDRESS: 1_000_000,
  LOGIN_ATTEMPT_WINDOW_SECONDS: 900,
  TRUSTED_PROXIES: '',
  HTTP_PORT: 0,
  HTTP_HOST: '127.0.0.1',
  LOG_LEVEL: 'error',
  ...overrides,
});

/**
 * One server process's module on an existing test database, HTTP on a free port of `host`: a second instance beside a
 * test app is another replica sharing its database (what several servers behind a load balancer share).
 */
export const startServerInstance = async (
  database: TestDatabase,
  overrides: Partial<ServerConfig> = {},
  host = '127.0.0.1',
): Promise<{ app: INestApplication; module: TestingModule }> => {
  const module = await Test.createTestingModule({ imports: [AppModule.forRoot(testConfig(database, overrides))] }).compile();
  // Quiet by default; TEST_LOGS=1 shows the server's logs when a test needs explaining.
  const app = module.createNestApplication({ logger: process.env['TEST_LOGS'] ? ['error', 'warn'] : false });
  useStrictBodyParsers(app);
  await app.init();
  await app.listen(0, host);
  return { app, module };
};

/**
 * The real server module on its own cloned database, seeded with the two demo schools, HTTP on a free port.
 * `overrides` change the configuration, e.g. per-test queue names; a function of the database when they name it (a
 * pooler's URL for it).
 */
export const createTestApp = async (
  overrides: Partial<ServerConfig> | ((database: TestDatabase) => Partial<ServerConfig>) = {},
): Promise<TestApp> => {
  const database = await createTestDatabase();
  const owner = createOwnerDataSource(database.ownerUrl);
  await owner.initialize();
  const demo = await owner.transaction((manager) => seedDemo(manager));
  await ensureDispatchRuns(owner, demo);
  const { app, module } = await startServerInstance(database, typeof overrides === 'function' ? overrides(database) : overrides);
  const logger = module.get(DataSource).logger as StrayQueryLogger;
  return {
    app,
    module,
    database,
    demo,
    owner,
    strays: () => [...logger.strays],
    close: async () => {
      await app.close();
      await owner.destroy();
      await database.drop();
    },
  };
};
