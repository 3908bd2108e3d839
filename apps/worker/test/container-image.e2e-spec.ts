import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateMessageSigningKeyPair } from '@naalya/rmq';
import { OWNER_URL, freePort } from '@naalya/test-stack';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// No Docker daemon runs where the tests do, so this runs each image's own steps instead: the files the Dockerfiles copy
// (tools/scripts/image-files.mjs, which they run too), the production dependency set from the Dockerfile's own `npm ci`
// into a clean folder, then each app started from that folder with the image's ENV and CMD as a non-root user, and the
// image's HEALTHCHECK command run until it answers. What this cannot show (the base image, the layers, docker build
// itself) the README says.

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const APPS = ['server', 'worker'] as const;
type App = (typeof APPS)[number];

/** The final stage of a Dockerfile: what the image runs with. */
type Image = { env: Record<string, string>; user: string; npmCi: string[]; healthcheck: string[]; cmd: string[]; text: string };

const readImage = (app: App): Image => {
  const text = readFileSync(join(ROOT, `apps/${app}/Dockerfile`), 'utf8');
  // Continuation lines joined, comments dropped, so each instruction is one line.
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => line.trim() && !line.trim().startsWith('#'));
  const last = lines.map((line) => line.startsWith('FROM ')).lastIndexOf(true);
  const stage = lines.slice(last + 1);
  const one = (instruction: string) => {
    const found = stage.filter((line) => line.startsWith(`${instruction} `));
    if (found.length !== 1) throw new Error(`apps/${app}/Dockerfile: expected one ${instruction} in the final stage, found ${found.length}`);
    return (found[0] as string).slice(instruction.length + 1).trim();
  };
  const env = Object.fromEntries(
    stage
      .filter((line) => line.startsWith('ENV '))
      .flatMap((line) => line.slice(4).trim().split(/\s+/))
      .map((pair) => pair.split('=') as [string, string]),
  );
  const npmCi = stage
    .filter((line) => line.startsWith('RUN '))
    .flatMap((line) => line.slice(4).split('&&'))
    .map((command) => command.trim())
    .find((command) => command.startsWith('npm ci'));
  if (!npmCi) throw new Error(`apps/${app}/Dockerfile: no npm ci in the final stage`);
  const healthcheck = /\bCMD (\[.*\])$/.exec(one('HEALTHCHECK'))?.[1];
  if (!healthcheck) throw new Error(`apps/${app}/Dockerfile: HEALTHCHECK has no exec-form CMD`);
  return { env, user: one('USER'), npmCi: npmCi.split(/\s+/).slice(1), healthcheck: JSON.parse(healthcheck), cmd: JSON.parse(one('CMD')), text };
};

// The images run as the node image's `node` user. Here, when the tests run as root, an unprivileged account stands in
// for it (setpriv, util-linux); otherwise the test's own user is already not root.
const RUN_AS = process.getuid?.() === 0 ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', '--'] : [];

/** A command of the image (["node", ...]) as the unprivileged user, from the image folder, with only the given environment. */
const asImageUser = (argv: string[]): [string, string[]] => {
  const [program, ...args] = [...RUN_AS, ...argv.map((part, index) => (index === 0 && part === 'node' ? process.execPath : part))];
  return [program as string, args];
};

const uidOf = (pid: number): number => Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

const run = (command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }) => {
  const result = spawnSync(command, args, { cwd: options.cwd, env: options.env ?? process.env, encoding: 'utf8', timeout: options.timeoutMs ?? 120_000 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout}`);
  return result.stdout;
};

describe('the container images, step by step (no Docker daemon here)', () => {
  const suffix = `${process.pid}_${randomBytes(3).toString('hex')}`;
  const database = `naalya_image_${suffix}`;
  const vhost = `naalya_image_${suffix}`;
  const password = () => randomBytes(18).toString('hex');
  const roles = { app: `naalya_app_image_${suffix}`, checkpoint: `naalya_checkpoint_image_${suffix}` };
  const brokerUsers = { server: `naalya_server_image_${suffix}`, worker: `naalya_worker_image_${suffix}` };
  const dbUrl = (user: string, secret: string) => {
    const url = new URL(OWNER_URL);
    url.pathname = `/${database}`;
    url.username = user;
    url.password = secret;
    return url.toString();
  };
  const ownerUrl = (() => {
    const url = new URL(OWNER_URL);
    url.pathname = `/${database}`;
    return url.toString();
  })();
  const brokerUrl = (user: string, secret: string) => `amqp://${user}:${secret}@127.0.0.1:5672/${encodeURIComponent(vhost)}`;
  const runSigning = generateMessageSigningKeyPair(`image-${suffix.replaceAll('_', '-')}`);
  const ports = { server: 0, worker: 0 };
  const images = { server: readImage('server'), worker: readImage('worker') };
  const children: ChildProcess[] = [];
  let dir = '';
  const timings: string[] = [];
  const timed = <T>(what: string, work: () => T): T => {
    const since = Date.now();
    const result = work();
    timings.push(`${what} ${((Date.now() - since) / 1000).toFixed(1)} s`);
    return result;
  };
  const appEnv: Record<App, Record<string, string>> = { server: {}, worker: {} };

  /** What a container of the image gets: PATH, the image's ENV, the service's own variables. Nothing of this process. */
  const containerEnv = (app: App): NodeJS.ProcessEnv => ({ PATH: process.env['PATH'], ...images[app].env, ...appEnv[app] });

  const healthcheck = (app: App) => {
    const [command, args] = asImageUser(images[app].healthcheck);
    return spawnSync(command, args, { cwd: dir, env: containerEnv(app), encoding: 'utf8', timeout: 10_000 });
  };

  const start = (app: App) => {
    const [command, args] = asImageUser(images[app].cmd);
    const child = spawn(command, args, { cwd: dir, env: containerEnv(app), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    children.push(child);
    return { child, output: () => output };
  };

  const untilHealthy = async (app: App, started: { child: ChildProcess; output: () => string }, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (started.child.exitCode !== null) throw new Error(`${app} exited ${started.child.exitCode}: ${started.output()}`);
      if (healthcheck(app).status === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    throw new Error(`${app}'s healthcheck did not pass within ${timeoutMs} ms: ${started.output()}`);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'naalya-image-'));
    // mkdtemp makes it private to its owner; the image's files are readable by its unprivileged user, as here.
    chmodSync(dir, 0o755);
    // The manifests stage, then the runtime stage's own `npm ci` (--omit=dev). --prefer-offline takes packages from the
    // npm cache the project's own `npm ci` filled, as a warm Docker layer cache would; nothing else differs.
    run(process.execPath, [join(ROOT, 'tools/scripts/image-files.mjs'), 'manifests', dir], { cwd: ROOT });
    timed('npm ci --omit=dev', () => run('npm', [...images.server.npmCi, '--prefer-offline'], { cwd: dir, timeoutMs: 150_000 }));
    timed('built files', () => {
      for (const app of APPS) run(process.execPath, [join(ROOT, 'tools/scripts/image-files.mjs'), 'built', app, dir], { cwd: ROOT });
    });

    ports.server = await freePort();
    ports.worker = await freePort();
    const secrets = { app: password(), checkpoint: password(), server: password(), worker: password() };
    const toolsQueue = `agent-tools-image-${suffix}`;
    const runsQueue = `agent-runs-image-${suffix}`;
    appEnv.server = {
      DATABASE_URL: dbUrl(roles.app, secrets.app),
      RABBITMQ_URL: brokerUrl(brokerUsers.server, secrets.server),
      JWT_SECRET: randomBytes(32).toString('hex'),
      DISPATCH_SIGNING_KEY: randomBytes(32).toString('hex'),
      RUN_SIGNING_KEY: runSigning.privateKey,
      WORKER_BROKER_USER: brokerUsers.worker,
      AGENT_TOOLS_QUEUE: toolsQueue,
      AGENT_RUNS_QUEUE: runsQueue,
      HTTP_PORT: String(ports.server),
      // The image's METRICS_PORT is fixed; here a free one, so tests beside this one cannot collide on it.
      METRICS_PORT: '0',
      // info: the server says where /metrics is.
      LOG_LEVEL: 'info',
    };
    appEnv.worker = {
      RABBITMQ_URL: brokerUrl(brokerUsers.worker, secrets.worker),
      CHECKPOINT_DATABASE_URL: dbUrl(roles.checkpoint, secrets.checkpoint),
      SERVER_BROKER_USER: brokerUsers.server,
      RUN_SIGNING_PUBLIC_KEYS: runSigning.publicKey,
      AGENT_MODEL: 'scripted',
      AGENT_TOOLS_QUEUE: toolsQueue,
      AGENT_RUNS_QUEUE: runsQueue,
      WORKER_HEALTH_PORT: String(ports.worker),
      METRICS_PORT: '0',
      LOG_LEVEL: 'log',
    };
    // The compose file's setup job, from the server image's own CLIs in production mode: the only step given the owner's
    // URL and a broker administrator. It runs as this process's user, since rabbitmqctl (how the setup reaches this
    // broker without its management API) needs the broker's cookie; compose's setup goes through the management API.
    const setupEnv = {
      ...containerEnv('server'),
      DATABASE_OWNER_URL: ownerUrl,
      CHECKPOINT_DATABASE_URL: appEnv.worker['CHECKPOINT_DATABASE_URL'],
      RABBITMQ_ADMIN_URL: `amqp://guest:guest@127.0.0.1:5672/${encodeURIComponent(vhost)}`,
      WORKER_RABBITMQ_URL: appEnv.worker['RABBITMQ_URL'],
    };
    timed('db-setup', () => run(process.execPath, ['apps/server/dist/cli/db-setup.js'], { cwd: dir, env: setupEnv }));
    timed('rmq-setup', () => run(process.execPath, ['apps/server/dist/cli/rmq-setup.js'], { cwd: dir, env: setupEnv }));
  }, 240_000);

  afterAll(async () => {
    const since = Date.now();
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    const dropDatabase = async () => {
      const maintenance = new pg.Client({ connectionString: OWNER_URL });
      await maintenance.connect();
      try {
        await maintenance.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
        for (const role of Object.values(roles)) await maintenance.query(`DROP ROLE IF EXISTS "${role}"`).catch(() => undefined);
      } finally {
        await maintenance.end();
      }
    };
    // Each rabbitmqctl starts an Erlang node of its own (seconds on a busy machine): all at once, beside the rest.
    const rabbitmqctl = (...args: string[]) =>
      new Promise<void>((resolve) => spawn('rabbitmqctl', ['-q', ...args], { stdio: 'ignore' }).once('exit', () => resolve()).once('error', () => resolve()));
    await Promise.all([
      dropDatabase(),
      rabbitmqctl('delete_vhost', vhost),
      ...Object.values(brokerUsers).map((user) => rabbitmqctl('delete_user', user)),
      dir ? rm(dir, { recursive: true, force: true }) : undefined,
    ]);
    console.log(`image steps: ${timings.join(', ')}, clean-up ${((Date.now() - since) / 1000).toFixed(1)} s`);
  }, 120_000);

  it('both Dockerfiles follow the pattern: multi-stage, production dependencies only, non-root, a HEALTHCHECK, production mode', () => {
    for (const app of APPS) {
      const image = images[app];
      expect(image.text.match(/^FROM /gm)?.length, app).toBeGreaterThanOrEqual(3);
      expect(image.npmCi, app).toContain('--omit=dev');
      expect(image.user, app).not.toMatch(/^(root|0)$/);
      expect(image.env['NODE_ENV'], app).toBe('production');
      expect(image.text, app).toContain(`image-files.mjs built ${app} /out`);
      expect(image.text, app).toContain('image-files.mjs manifests /manifests');
    }
    expect(images.server.env['HTTP_HOST']).toBe('0.0.0.0');
    expect(images.worker.env['WORKER_HEALTH_HOST']).toBe('0.0.0.0');
    // /metrics for a scraper inside the container network, on a port of its own in both images.
    for (const app of APPS) expect(images[app].env, app).toMatchObject({ METRICS_HOST: '0.0.0.0', METRICS_PORT: '9464' });
    // The build context (`COPY . .`) must not carry local secrets, keys or installs into a layer.
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((line) => line.trim());
    for (const entry of ['.env', '.naalya', 'deploy/.env.compose', '**/node_modules', '**/dist', '.git']) expect(ignored, entry).toContain(entry);
  });

  it('the worker\'s HEALTHCHECK fails, saying why, when its health endpoint is switched off', () => {
    const [command, args] = asImageUser(images.worker.healthcheck);
    const result = spawnSync(command, args, { cwd: dir, env: { ...containerEnv('worker'), WORKER_HEALTH_PORT: '0' }, encoding: 'utf8', timeout: 10_000 });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/WORKER_HEALTH_PORT is 0 or empty: the worker serves no \/ready/);
  });

  it('the production dependency set holds no development tool, and each library comes from its build', () => {
    for (const devOnly of ['vitest', 'nx', 'typescript', 'eslint', '@swc/core', '@nestjs/testing', 'fast-check']) {
      expect(existsSync(join(dir, 'node_modules', devOnly)), devOnly).toBe(false);
    }
    for (const runtime of ['@nestjs/core', 'amqplib', 'pg', '@langchain/langgraph', 'zod']) expect(existsSync(join(dir, 'node_modules', runtime)), runtime).toBe(true);
    for (const lib of ['access', 'agent-tools', 'rmq']) expect(existsSync(join(dir, 'libs', lib, 'dist', 'index.js')), lib).toBe(true);
    // Sources stay out: only what was built.
    expect(existsSync(join(dir, 'apps/server/src'))).toBe(false);
    expect(existsSync(join(dir, 'libs/rmq/src'))).toBe(false);
  });

  it.each(APPS)('the %s starts from the image folder as a non-root user, and its HEALTHCHECK fails until it is ready, then passes', async (app) => {
    // Nothing listens yet: the image's own check must say so, or "healthy" would mean nothing.
    expect(healthcheck(app).status).toBe(1);
    const started = start(app);
    await untilHealthy(app, started);
    const pid = started.child.pid as number;
    expect(uidOf(pid)).not.toBe(0);
    const response = await fetch(`http://127.0.0.1:${ports[app]}/ready`);
    expect(response.status).toBe(200);
    if (app === 'worker') {
      expect(await response.json()).toMatchObject({ ready: true, checks: { broker: { ok: true }, checkpointDatabase: { ok: true }, model: { ok: true } } });
    }
    // Production mode: JSON log lines, and /metrics on its own port (here a free one) on every interface.
    const metricsLine = started.output().split('\n').find((line) => line.includes('Metrics on http://'));
    expect(metricsLine, started.output()).toBeDefined();
    expect(JSON.parse(metricsLine as string)).toMatchObject({ app, level: 'info', msg: expect.stringMatching(/^Metrics on http:\/\/0\.0\.0\.0:\d+\/metrics$/) });
    const metricsPort = /:(\d+)\/metrics/.exec(metricsLine as string)?.[1];
    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain(`process_cpu_user_seconds_total{app="${app}"}`);
    // SIGTERM, as `docker stop` sends: the app drains and ends on it (Nest's shutdown hooks re-raise the signal once
    // closed), well inside Docker's 10-second grace before its SIGKILL.
    const since = Date.now();
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      started.child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    started.child.kill('SIGTERM');
    const { code, signal } = await exited;
    expect(code === 0 || signal === 'SIGTERM', `exit ${code} ${signal}`).toBe(true);
    expect(Date.now() - since).toBeLessThan(10_000);
  }, 90_000);
});
