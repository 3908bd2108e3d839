#!/usr/bin/env node
// Runs a command with one app's configuration: `.env` (or `.env.example` when there is none) holds a
// section per app, so the worker never receives the server's secrets. Variables already set win.
// Usage: node tools/scripts/with-env.mjs <server|worker|setup> -- <command> [args...]
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { localRunSigningKeys, publicKeyOf } from './run-signing-keys.mjs';

export const readSection = (app, file = existsSync('.env') ? '.env' : '.env.example') => {
  const values = {};
  let section = 'shared';
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const heading = raw.match(/^#\s*-+\s*(\w+)/);
    if (heading) section = heading[1];
    const line = raw.trim();
    if (!line || line.startsWith('#') || !line.includes('=')) continue;
    if (section !== app && section !== 'shared') continue;
    const index = line.indexOf('=');
    values[line.slice(0, index).trim()] = line.slice(index + 1).trim();
  }
  return values;
};

const isSet = (name, values, env) => Boolean(values[name]?.trim() || env[name]?.trim());

/**
 * The run signing pair, when the configuration leaves it out (as .env.example does: a private key is never committed):
 * the server gets the private half of a pair made once for this machine (run-signing-keys.mjs, git-ignored), the worker
 * only its public half. A worker whose server has a RUN_SIGNING_KEY of its own (in .env or the environment) gets that
 * key's public half instead, so the two always agree.
 */
export const withRunSigningKeys = (app, values, env = process.env) => {
  if (app === 'server' && !isSet('RUN_SIGNING_KEY', values, env)) return { ...values, RUN_SIGNING_KEY: localRunSigningKeys().privateKey };
  if (app === 'worker' && !isSet('RUN_SIGNING_PUBLIC_KEYS', values, env)) {
    const serverKey = env.RUN_SIGNING_KEY?.trim() || readSection('server').RUN_SIGNING_KEY?.trim();
    return { ...values, RUN_SIGNING_PUBLIC_KEYS: serverKey ? publicKeyOf(serverKey) : localRunSigningKeys().publicKey };
  }
  return values;
};

/**
 * Written in the server's section but used by the setup CLIs alone (db:setup, db:seed, rmq:setup): the database owner
 * bypasses row-level security and the broker administrator can read every queue, so the running server never gets them.
 */
export const SETUP_ONLY = ['DATABASE_OWNER_URL', 'RABBITMQ_ADMIN_URL', 'RABBITMQ_MANAGEMENT_URL'];

const withoutSetupOnly = (values) => Object.fromEntries(Object.entries(values).filter(([name]) => !SETUP_ONLY.includes(name)));

/** One app's section with the run signing key it needs: what the app is started with. */
export const readAppEnv = (app) => withRunSigningKeys(app, withoutSetupOnly(readSection(app)));

// The setup CLIs run with the server's whole section (the owner and the broker administrator included), plus the
// worker's credentials they create: the broker setup makes the worker's broker user (WORKER_RABBITMQ_URL), the database
// setup its checkpoint role. Neither app receives these.
export const readSetupEnv = () => {
  const worker = readSection('worker');
  return {
    ...withRunSigningKeys('server', readSection('server')),
    WORKER_RABBITMQ_URL: worker.RABBITMQ_URL,
    CHECKPOINT_DATABASE_URL: worker.CHECKPOINT_DATABASE_URL,
  };
};

/**
 * The environment a process is started with: its section under the caller's variables (which win), except that an app
 * never inherits the setup's credentials, not even from the shell.
 */
export const processEnv = (app, env = process.env) =>
  app === 'setup' ? { ...readSetupEnv(), ...env } : withoutSetupOnly({ ...readAppEnv(app), ...env });

if (import.meta.url === `file://${process.argv[1]}`) {
  const [app, separator, command, ...args] = process.argv.slice(2);
  if (!['server', 'worker', 'setup'].includes(app) || separator !== '--' || !command) {
    console.error('Usage: node tools/scripts/with-env.mjs <server|worker|setup> -- <command> [args...]');
    process.exit(2);
  }
  const child = spawn(command, args, { stdio: 'inherit', env: processEnv(app) });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
