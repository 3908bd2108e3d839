#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ScriptError } from './script.js';
import { startModelSimulator } from './server.js';

/** `node tools/model-simulator/dist/main.js [--port N] [--host H] [--script file.json]`: serves until SIGINT or SIGTERM. */

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, host: { type: 'string', default: '127.0.0.1' }, script: { type: 'string' } } });

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error(`model simulator: --port must be an integer 0..65535, got ${values.port}`);
  process.exit(2);
}

try {
  const script = values.script ? JSON.parse(readFileSync(values.script, 'utf8')) : undefined;
  const simulator = await startModelSimulator({ port, host: values.host, script });
  // The URL alone on its own line, so a script can read it.
  console.log(simulator.url);
  const stop = () => void simulator.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  console.error(error instanceof ScriptError ? error.message : `model simulator: ${(error as Error).message}`);
  process.exit(2);
}
