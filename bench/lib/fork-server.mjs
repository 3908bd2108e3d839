// A variant's server: a bench script of servers/ forked with its own environment, ready when it says so.
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stopChild } from '@naalya/test-stack';

const SERVERS = fileURLToPath(new URL('../servers/', import.meta.url));

export const forkServer = async (script, env, execArgv = []) => {
  const child = fork(`${SERVERS}${script}`, [], { env: { ...process.env, ...env }, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} at start-up`)));
  });
  return { child, pid: child.pid, ready, stop: (signal) => stopChild(child, signal) };
};

/** A forked server's CPU time in µs, asked over IPC (servers importing lib/cpu-reporter.mjs answer). */
export const serverCpuMicros = (server) =>
  new Promise((resolve, reject) => {
    const onMessage = (message) => {
      if (typeof message?.cpu !== 'number') return;
      server.child.off('message', onMessage);
      clearTimeout(timer);
      resolve(message.cpu);
    };
    const timer = setTimeout(() => {
      server.child.off('message', onMessage);
      reject(new Error('the server did not report its CPU within 5 s'));
    }, 5_000);
    server.child.on('message', onMessage);
    server.child.send('cpu');
  });
