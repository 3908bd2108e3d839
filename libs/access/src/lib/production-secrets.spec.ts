import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  MIN_SIGNING_KEY_LENGTH,
  MIN_URL_PASSWORD_LENGTH,
  PUBLISHED_SECRETS,
  SERVER_PRODUCTION_SECRETS,
  WORKER_PRODUCTION_SECRETS,
  productionSecretProblems,
} from './production-secrets.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');

/** KEY=VALUE lines of an env file, commented ones included: a value shown in a comment is published all the same. */
const envValues = (text: string, { comments = true } = {}): Array<[string, string]> =>
  text
    .split('\n')
    .filter((line) => comments || !line.trim().startsWith('#'))
    .map((line) => /^#?\s*([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim()))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => [match[1] as string, (match[2] as string).trim()]);

/** Every password written literally inside a URL of the text (`scheme://user:password@`), not `${...}` interpolations. */
const literalUrlPasswords = (text: string): string[] =>
  [...text.matchAll(/[a-z+]+:\/\/[^:/@\s"']+:([^@\s"']+)@/g)].map((match) => match[1] as string).filter((password) => !password.startsWith('${'));

const SECRET_NAMES = new Set(['JWT_SECRET', 'DISPATCH_SIGNING_KEY', 'RUN_SIGNING_KEY']);
const PASSWORD_NAMES = /PASSWORD$|_PASS$/;

/** The secrets a file publishes: signing keys by name, passwords by name, and the password of every literal URL. */
const publishedIn = (text: string): string[] => {
  const values = envValues(text)
    .filter(([name, value]) => value !== '' && (SECRET_NAMES.has(name) || PASSWORD_NAMES.test(name)))
    .map(([, value]) => value);
  // YAML `NAME: value` for signing keys and passwords written literally in the compose file.
  const yaml = [...text.matchAll(/^\s*([A-Z][A-Z0-9_]*):\s*("?)([^"\s#]+)\2\s*$/gm)]
    .filter((match) => (SECRET_NAMES.has(match[1] as string) || PASSWORD_NAMES.test(match[1] as string)) && !(match[3] as string).startsWith('${'))
    .map((match) => match[3] as string);
  return [...new Set([...values, ...yaml, ...literalUrlPasswords(text)])];
};

const PRODUCTION = { NODE_ENV: 'production' };
const GOOD = {
  JWT_SECRET: 'j'.repeat(MIN_SIGNING_KEY_LENGTH),
  DISPATCH_SIGNING_KEY: 'd'.repeat(MIN_SIGNING_KEY_LENGTH),
  RUN_SIGNING_KEY: 'k1:MC4CAQAwBQYDK2VwBCIEIOwn-not-a-published-key',
  DATABASE_URL: `postgres://naalya_app:${'a'.repeat(MIN_URL_PASSWORD_LENGTH)}@db:5432/naalya`,
  RABBITMQ_URL: `amqp://naalya_server:${'s'.repeat(MIN_URL_PASSWORD_LENGTH)}@mq:5672/naalya`,
  CHECKPOINT_DATABASE_URL: `postgres://naalya_checkpoint:${'c'.repeat(MIN_URL_PASSWORD_LENGTH)}@db:5432/naalya`,
};

describe('the published secrets list is what the repository publishes', () => {
  it.each(['.env.example', 'docker-compose.yml', 'deploy/.env.compose.example'])('every secret in %s is on the list', (file) => {
    const text = read(file);
    const missing = publishedIn(text).filter((value) => !PUBLISHED_SECRETS.includes(value));
    expect(missing).toEqual([]);
  });

  it('.env.example publishes the signing keys and the passwords the apps connect with, and each is on the list', () => {
    const published = publishedIn(read('.env.example'));
    for (const value of ['local-development-secret-change-me-0123456789', 'local-dispatch-signing-key-change-me-0123456789', 'naalya_app_local', 'naalya_server_local', 'naalya_worker_local', 'naalya_checkpoint_local']) {
      expect(published).toContain(value);
    }
  });

  it('deploy/.env.compose.example gives every secret compose requires a placeholder, and the apps refuse each placeholder', () => {
    const required = [...read('docker-compose.yml').matchAll(/\$\{([A-Z_]+):\?/g)].map((match) => match[1] as string);
    const placeholders = new Map(envValues(read('deploy/.env.compose.example')));
    expect(required.length).toBeGreaterThanOrEqual(8);
    for (const name of required) {
      expect(placeholders.get(name), name).toBeTruthy();
      expect(PUBLISHED_SECRETS, name).toContain(placeholders.get(name));
    }
  });

  it('the compose file holds no secret of its own: every literal URL password and secret value is gone', () => {
    expect(literalUrlPasswords(read('docker-compose.yml'))).toEqual([]);
    expect(publishedIn(read('docker-compose.yml'))).toEqual([]);
  });
});

describe('productionSecretProblems', () => {
  it('checks nothing outside production: .env.example\'s local defaults keep working', () => {
    const env = Object.fromEntries(envValues(read('.env.example'), { comments: false }));
    expect(productionSecretProblems(SERVER_PRODUCTION_SECRETS, env)).toEqual([]);
    expect(productionSecretProblems(SERVER_PRODUCTION_SECRETS, { ...env, NODE_ENV: 'development' })).toEqual([]);
  });

  it('accepts secrets of the operator\'s own in production', () => {
    expect(productionSecretProblems(SERVER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD })).toEqual([]);
    expect(productionSecretProblems(WORKER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD })).toEqual([]);
  });

  it.each(PUBLISHED_SECRETS.filter((value) => value.length >= MIN_SIGNING_KEY_LENGTH))('refuses the published signing key %s as JWT_SECRET and DISPATCH_SIGNING_KEY', (value) => {
    for (const name of ['JWT_SECRET', 'DISPATCH_SIGNING_KEY']) {
      const problems = productionSecretProblems(SERVER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD, [name]: value });
      expect(problems).toEqual([`${name} is a value published in the repository: NODE_ENV is production, so set a secret of your own`]);
      expect(problems.join()).not.toContain(value);
    }
  });

  it('a published secret behind a key id, or kept as the old key of a rotation list, is still the published secret', () => {
    for (const value of ['k2:local-development-secret-change-me-0123456789', `k2:${'n'.repeat(40)},k1:local-development-secret-change-me-0123456789`]) {
      const problems = productionSecretProblems(SERVER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD, JWT_SECRET: value });
      expect(problems).toEqual([expect.stringMatching(/^JWT_SECRET is a value published in the repository/)]);
    }
  });

  it('refuses a published key kept as a previous key of a rotation (JWT_PREVIOUS_SECRETS, DISPATCH_PREVIOUS_SIGNING_KEYS)', () => {
    const previous = {
      JWT_PREVIOUS_SECRETS: `k0:${'p'.repeat(40)},default:local-development-secret-change-me-0123456789`,
      DISPATCH_PREVIOUS_SIGNING_KEYS: 'k1:local-dispatch-signing-key-change-me-0123456789',
    };
    expect(productionSecretProblems(SERVER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD, ...previous })).toEqual([
      expect.stringMatching(/^JWT_PREVIOUS_SECRETS is a value published in the repository/),
      expect.stringMatching(/^DISPATCH_PREVIOUS_SIGNING_KEYS is a value published in the repository/),
    ]);
    expect(productionSecretProblems(SERVER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD, JWT_PREVIOUS_SECRETS: `k0:${'p'.repeat(40)}` })).toEqual([]);
  });

  it(`refuses a signing key shorter than ${MIN_SIGNING_KEY_LENGTH} characters`, () => {
    const problems = productionSecretProblems(SERVER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD, DISPATCH_SIGNING_KEY: 'k1:' + 'x'.repeat(MIN_SIGNING_KEY_LENGTH - 1) });
    expect(problems).toEqual([`DISPATCH_SIGNING_KEY must be at least ${MIN_SIGNING_KEY_LENGTH} characters: NODE_ENV is production, so set a secret of your own`]);
  });

  it('refuses a published run signing key, whatever key id it is given: the key material is compared', () => {
    // Any published value stands in for a key here: the check compares what follows the key id with the list.
    expect(productionSecretProblems(SERVER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD, RUN_SIGNING_KEY: `k9:${PUBLISHED_SECRETS[0]}` })).toEqual([
      'RUN_SIGNING_KEY is a key published in the repository: NODE_ENV is production, so set a secret of your own',
    ]);
  });

  it.each([
    ['DATABASE_URL', 'server', 'postgres://naalya_app:naalya_app_local@db:5432/naalya'],
    ['RABBITMQ_URL', 'server', 'amqp://naalya_server:naalya_server_local@mq:5672/naalya'],
    ['RABBITMQ_URL', 'worker', 'amqp://naalya_worker:naalya_worker_local@mq:5672/naalya'],
    ['CHECKPOINT_DATABASE_URL', 'worker', 'postgres://naalya_checkpoint:naalya_checkpoint_local@db:5432/naalya'],
    ['DATABASE_URL', 'server', 'postgres://naalya_app:replace-me-app-role-password@postgres:5432/naalya'],
  ])('refuses %s (%s) with a published password, naming the variable and never the password', (name, app, url) => {
    const specs = app === 'server' ? SERVER_PRODUCTION_SECRETS : WORKER_PRODUCTION_SECRETS;
    const problems = productionSecretProblems(specs, { ...PRODUCTION, ...GOOD, [name]: url });
    expect(problems).toEqual([`${name} has a password published in the repository: NODE_ENV is production, so set a secret of your own`]);
    expect(problems.join()).not.toContain(new URL(url).password);
  });

  it(`refuses a URL without a password or with one shorter than ${MIN_URL_PASSWORD_LENGTH} characters, and checks every node of a cluster`, () => {
    const check = (url: string) => productionSecretProblems(WORKER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD, CHECKPOINT_DATABASE_URL: url });
    expect(check('postgres://naalya_checkpoint@db:5432/naalya')).toEqual([expect.stringMatching(/^CHECKPOINT_DATABASE_URL has no password/)]);
    expect(check(`postgres://cp:${'p'.repeat(MIN_URL_PASSWORD_LENGTH - 1)}@db/naalya`)).toEqual([expect.stringMatching(/^CHECKPOINT_DATABASE_URL has a password shorter than 16/)]);
    // Percent-encoding is undone before comparing: an encoded published password is the same password.
    expect(check('postgres://cp:naalya%5Fcheckpoint%5Flocal@db/naalya')).toEqual([expect.stringMatching(/published/)]);
    const cluster = `${GOOD.RABBITMQ_URL},amqp://naalya_worker:naalya_worker_local@mq2:5672/naalya`;
    expect(productionSecretProblems(WORKER_PRODUCTION_SECRETS, { ...PRODUCTION, ...GOOD, RABBITMQ_URL: cluster })).toEqual([
      expect.stringMatching(/^RABBITMQ_URL has a password published/),
    ]);
  });

  it('names every bad variable at once, in a fixed order, so one start says everything to fix', () => {
    const env = { ...PRODUCTION, ...Object.fromEntries(envValues(read('.env.example'), { comments: false })) };
    expect(productionSecretProblems(SERVER_PRODUCTION_SECRETS, env).map((line) => line.split(' ')[0])).toEqual(['JWT_SECRET', 'DISPATCH_SIGNING_KEY', 'DATABASE_URL', 'RABBITMQ_URL', 'MCP_RABBITMQ_URL']);
  });
});
