#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ScriptError } from './script.js';
import { startModelSimulator, type Responder } from './server.js';

/**
 * `node tools/model-simulator/dist/main.js [--port N] [--host H] [--script file.json | --responder module.js]`: serves
 * until SIGINT or SIGTERM. A responder module's default export answers each request (see README).
 */

const { values } = parseArgs({
  options: { port: { type: 'string', default: '0' }, host: { type: 'string', default: '127.0.0.1' }, script: { type: 'string' }, responder: { type: 'string' } },
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65_535) {
  console.error(`model simulator: --port must be an integer 0..65535, got ${values.port}`);
  process.exit(2);
}
if (values.script && values.responder) {
  console.error('model simulator: give --script or --responder, not both');
  process.exit(2);
}

const loadResponder = async (path: string): Promise<Responder> => {
  const loaded = (await import(pathToFileURL(resolve(path)).href)) as { default?: unknown };
  if (typeof loaded.default !== 'function') throw new Error(`${path} has no default export that is a function (request) => turn`);
  return loaded.default as Responder;
};

try {
  const script = values.script ? JSON.parse(readFileSync(values.script, 'utf8')) : undefined;
  const responder = values.responder ? await loadResponder(values.responder) : undefined;
  const simulator = await startModelSimulator({ port, host: values.host, script, responder });
  // The URL alone on its own line, so a script can read it.
  console.log(simulator.url);
  const stop = () => void simulator.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} catch (error) {
  console.error(error instanceof ScriptError ? error.message : `model simulator: ${(error as Error).message}`);
  process.exit(2);
}
