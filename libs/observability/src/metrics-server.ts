import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { MetricsConfig } from './metrics-config.js';
import { closeSideServer, listenSideServer } from './side-server.js';

/**
 * `GET /metrics` in Prometheus's text format, on its own port (node:http, no framework): the API's guards, body parsers
 * and rate limits never see a scrape, and the port can be left off the public network.
 */
export class MetricsServer {
  private server: Server | undefined;

  constructor(
    private readonly registry: Registry,
    private readonly config: MetricsConfig,
  ) {}

  async listen(): Promise<AddressInfo> {
    const server = await listenSideServer((request, response) => {
      const path = (request.url ?? '/').split('?')[0];
      if (request.method !== 'GET' || path !== '/metrics') {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('Only GET /metrics is served here.\n');
        return;
      }
      this.registry.metrics().then(
        (body) => response.writeHead(200, { 'content-type': this.registry.contentType, 'cache-control': 'no-store' }).end(body),
        (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`Metrics could not be collected: ${error instanceof Error ? error.message : String(error)}\n`),
      );
    }, this.config);
    this.server = server;
    // A scrape endpoint never keeps the process alive: shutdown is decided by the app's own hooks.
    server.unref();
    return server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await closeSideServer(server);
  }
}
