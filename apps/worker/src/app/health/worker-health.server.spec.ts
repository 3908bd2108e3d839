import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelServerProbe } from './model-server.probe.js';
import { WorkerHealthServer, type ReadinessCheck } from './worker-health.server.js';

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const opened: { close: () => Promise<void> }[] = [];
afterEach(async () => {
  for (const item of opened.splice(0)) await item.close();
});

const serve = async (checks: ReadinessCheck[]) => {
  const server = new WorkerHealthServer({ host: '127.0.0.1', port: 0, checks, logger: quiet });
  opened.push(server);
  const { port } = await server.listen();
  return `http://127.0.0.1:${port}`;
};

/** A model server stand-in that answers 401 to everything, as a provider does without a key. */
const unauthorisedServer = async () => {
  const server = createServer((_request, response) => {
    response.writeHead(401).end('{"error":"no key"}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  opened.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

describe('the worker health endpoint', () => {
  it('/health answers 200 while the process lives; /ready is 200 when every check passes, naming each', async () => {
    const url = await serve([
      { name: 'broker', check: async () => ({ ok: true }) },
      { name: 'model', check: async () => ({ ok: true, model: 'scripted' }) },
    ]);
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${url}/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, checks: { broker: { ok: true }, model: { ok: true, model: 'scripted' } } });
  });

  it('/ready is 503 when one check fails, throws or does not answer in time', async () => {
    const url = await serve([
      { name: 'broker', check: async () => ({ ok: true }) },
      { name: 'checkpointDatabase', check: async () => Promise.reject(new Error('down')) },
      { name: 'model', check: async () => ({ ok: false }) },
    ]);
    const ready = await fetch(`${url}/ready`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ ready: false, checks: { broker: { ok: true }, checkpointDatabase: { ok: false }, model: { ok: false } } });
    expect((await fetch(`${url}/elsewhere`)).status).toBe(404);
  });
});

describe('ModelServerProbe', () => {
  it('any HTTP answer (a 401 here) is reachable; a closed port is not; each change is logged once, without the URL', async () => {
    const lines: string[] = [];
    const logger = { log: (line: string) => lines.push(line), warn: (line: string) => lines.push(line), error: () => undefined };
    let now = 0;
    const probe = new ModelServerProbe({ agentModel: 'openai:sim', baseUrl: await unauthorisedServer(), logger, now: () => now });
    expect(await probe.state()).toEqual({ reachable: true, probed: true });
    expect(lines).toEqual([]);
    const closed = new ModelServerProbe({ agentModel: 'anthropic:sim', baseUrl: 'http://127.0.0.1:1', logger, now: () => now });
    expect(await closed.state()).toEqual({ reachable: false, probed: true });
    expect(lines).toEqual(['The model server for "anthropic:sim" cannot be reached; runs will end with MODEL_UNREACHABLE until it is back.']);
    now += 1_000;
    expect(await closed.state()).toEqual({ reachable: false, probed: true });
  });

  it('is asked again only after its cache time, and says when the server is back', async () => {
    const lines: string[] = [];
    const logger = { log: (line: string) => lines.push(line), warn: (line: string) => lines.push(line), error: () => undefined };
    let now = 0;
    let up = false;
    let asked = 0;
    const fetchImpl = (async () => {
      asked += 1;
      if (!up) throw new TypeError('fetch failed');
      return new Response('{}', { status: 404 });
    }) as typeof fetch;
    const probe = new ModelServerProbe({ agentModel: 'openai:sim', baseUrl: 'http://127.0.0.1:9/v1', logger, fetchImpl, now: () => now });
    expect((await probe.state()).reachable).toBe(false);
    up = true;
    now += 14_000;
    expect((await probe.state()).reachable).toBe(false);
    expect(asked).toBe(1);
    now += 2_000;
    expect((await probe.state()).reachable).toBe(true);
    expect(lines).toEqual([
      'The model server for "openai:sim" cannot be reached; runs will end with MODEL_UNREACHABLE until it is back.',
      'The model server for "openai:sim" is reachable again.',
    ]);
  });

  it('the scripted model is not probed and always reachable', async () => {
    expect(await new ModelServerProbe({ agentModel: 'scripted', logger: quiet }).state()).toEqual({ reachable: true, probed: false });
  });
});
