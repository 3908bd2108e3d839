#!/usr/bin/env node
// `npm start`: sets up what is missing (idempotent: roles, migrations, broker topology), then runs the
// server and the worker as two processes, each with only its own configuration, until Ctrl-C.
import { spawn, spawnSync } from 'node:child_process';
import { processEnv } from './with-env.mjs';

// Variables set on the command line win over .env (or .env.example), as with-env.mjs has it.
const serverEnv = processEnv('server');
const workerEnv = processEnv('worker');
// The setups also create the worker's checkpoint role and broker user, so they alone get the worker's credentials.
const setupEnv = processEnv('setup');

for (const script of ['db-setup.js', 'rmq-setup.js']) {
  const result = spawnSync(process.execPath, [`apps/server/dist/cli/${script}`], { env: setupEnv, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
const children = [
  spawn(process.execPath, ['apps/server/dist/main.js'], { env: serverEnv, stdio: 'inherit' }),
  spawn(process.execPath, ['apps/worker/dist/main.js'], { env: workerEnv, stdio: 'inherit' }),
];
const stop = (signal) => children.forEach((child) => child.exitCode === null && child.kill(signal));
process.on('SIGINT', () => stop('SIGTERM'));
process.on('SIGTERM', () => stop('SIGTERM'));
for (const child of children) {
  child.on('exit', (code) => {
    stop('SIGTERM');
    process.exitCode = code ?? 0;
  });
}
