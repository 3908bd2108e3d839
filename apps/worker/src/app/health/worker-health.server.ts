import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { closeSideServer, listenSideServer } from '@naalya/observability';
import type { LoggerService } from '@nestjs/common';

/** One thing the worker needs to run a step, and whether it has it now. Each check bounds its own time. */
export type ReadinessCheck = { name: string; check: () => Promise<{ ok: boolean } & Record<string, unknown>> };

export type WorkerHealthServerOptions = { host: string; port: number; checks: readonly ReadinessCheck[]; logger: LoggerService };

/** A check that has not answered by then counts as down, so /ready always answers within it. */
const CHECK_TIMEOUT_MS = 4_000;

const withinTime = async (check: ReadinessCheck): Promise<{ ok: boolean } & Record<string, unknown>> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ ok: false; reason: string }>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, reason: 'no answer in time' }), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check.check().catch(() => ({ ok: false })), late]);
  } finally {
    clearTimeout(timer);
  }
};

/**
 * The worker's own small HTTP endpoint (node:http, no framework): `GET /health` says the process is alive, `GET /ready`
 * runs every check at once and answers 200 when all pass, 503 otherwise, with a JSON body naming each check.
 */
export class WorkerHealthServer {
  private server: Server | undefined;

  constructor(private readonly options: WorkerHealthServerOptions) {}

  async listen(): Promise<AddressInfo> {
    const server = await listenSideServer((request, response) => {
      const send = (status: number, body: unknown) => {
        response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        response.end(JSON.stringify(body));
      };
      if (request.method !== 'GET') return send(405, { error: 'Only GET is served here.' });
      const path = (request.url ?? '/').split('?')[0];
      if (path === '/health') return send(200, { status: 'ok' });
      if (path !== '/ready') return send(404, { error: 'Not found: /health or /ready.' });
      void Promise.all(this.options.checks.map(async (check) => [check.name, await withinTime(check)] as const)).then((results) => {
        const ready = results.every(([, result]) => result.ok);
        send(ready ? 200 : 503, { ready, checks: Object.fromEntries(results) });
      });
    }, this.options);
    this.server = server;
    const address = server.address() as AddressInfo;
    this.options.logger.log(`Health on http://${address.address}:${address.port} (/health, /ready)`);
    return address;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await closeSideServer(server);
  }
}
