import { createServer, type RequestListener, type Server } from 'node:http';

/**
 * A small node:http server of an app's own beside its API (metrics, health), listening once this resolves. Bounded like
 * every wait: a client that trickles its request is cut off.
 */
export const listenSideServer = async (handler: RequestListener, at: { host: string; port: number }): Promise<Server> => {
  const server = createServer(handler);
  server.headersTimeout = 5_000;
  server.requestTimeout = 10_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return server;
};

/** Closes its kept-alive connections too, so shutdown never waits for an idle scraper or probe to leave. */
export const closeSideServer = async (server: Server): Promise<void> => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
};
