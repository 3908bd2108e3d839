import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETUP_ONLY, processEnv, readSection } from '../with-env.mjs';

// with-env reads `.env` (else `.env.example`) from the working directory: each case runs in a folder of its own.
const ENV_FILE = `# ---- server ----
DATABASE_URL=postgres://app:app-password-0000@127.0.0.1:5432/naalya
DATABASE_OWNER_URL=postgres://owner@127.0.0.1:5432/naalya
RABBITMQ_ADMIN_URL=amqp://admin:admin@127.0.0.1:5672/naalya
RUN_SIGNING_KEY=k1:not-checked-here
# ---- worker ----
RABBITMQ_URL=amqp://worker:worker@127.0.0.1:5672/naalya
CHECKPOINT_DATABASE_URL=postgres://cp:cp@127.0.0.1:5432/naalya
RUN_SIGNING_PUBLIC_KEYS=k1:public
# ---- shared names ----
LOG_LEVEL=info
`;

describe('with-env: the server runs without the setup credentials', () => {
  const cwd = process.cwd();
  let dir;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'with-env-'));
    writeFileSync(join(dir, '.env'), ENV_FILE);
    process.chdir(dir);
  });
  afterAll(() => {
    process.chdir(cwd);
    rmSync(dir, { recursive: true, force: true });
  });

  it('the owner URL and the broker administrator stay in the file but reach only the setup', () => {
    expect(readSection('server').DATABASE_OWNER_URL).toBe('postgres://owner@127.0.0.1:5432/naalya');
    const server = processEnv('server', {});
    for (const name of SETUP_ONLY) expect(server).not.toHaveProperty(name);
    expect(server.DATABASE_URL).toContain('app-password-0000');
    const setup = processEnv('setup', {});
    expect(setup.DATABASE_OWNER_URL).toBe('postgres://owner@127.0.0.1:5432/naalya');
    expect(setup.RABBITMQ_ADMIN_URL).toBe('amqp://admin:admin@127.0.0.1:5672/naalya');
    expect(setup.CHECKPOINT_DATABASE_URL).toBe('postgres://cp:cp@127.0.0.1:5432/naalya');
  });

  it('not even from the shell: a DATABASE_OWNER_URL exported by the caller is dropped for the apps', () => {
    const shell = { DATABASE_OWNER_URL: 'postgres://shell-owner@db/naalya', LOG_LEVEL: 'debug' };
    expect(processEnv('server', shell)).not.toHaveProperty('DATABASE_OWNER_URL');
    expect(processEnv('worker', shell)).not.toHaveProperty('DATABASE_OWNER_URL');
    expect(processEnv('server', shell).LOG_LEVEL).toBe('debug');
    expect(processEnv('setup', shell).DATABASE_OWNER_URL).toBe('postgres://shell-owner@db/naalya');
  });
});
