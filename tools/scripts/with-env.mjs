#!/usr/bin/env node
// Runs a command with one app's configuration: `.env` (or `.env.example` when there is none) holds a
// section per app, so the worker never receives the server's secrets. Variables already set win.
// Usage: node tools/scripts/with-env.mjs <server|worker|setup> -- <command> [args...]
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

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

// The setup CLIs run with the server's section, plus the worker's credentials they create: the broker setup makes the
// worker's broker user (WORKER_RABBITMQ_URL), the database setup its checkpoint role. Neither app receives these.
export const readSetupEnv = () => {
  const worker = readSection('worker');
  return { ...readSection('server'), WORKER_RABBITMQ_URL: worker.RABBITMQ_URL, CHECKPOINT_DATABASE_URL: worker.CHECKPOINT_DATABASE_URL };
};

const readEnv = (app) => (app === 'setup' ? readSetupEnv() : readSection(app));

if (import.meta.url === `file://${process.argv[1]}`) {
  const [app, separator, command, ...args] = process.argv.slice(2);
  if (!['server', 'worker', 'setup'].includes(app) || separator !== '--' || !command) {
    console.error('Usage: node tools/scripts/with-env.mjs <server|worker|setup> -- <command> [args...]');
    process.exit(2);
  }
  const child = spawn(command, args, { stdio: 'inherit', env: { ...readEnv(app), ...process.env } });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
