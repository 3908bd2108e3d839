// The image's HEALTHCHECK (apps/server/Dockerfile): GET /ready on this container's own API port, exit 0 when the server
// answers ready and 1 otherwise, Docker's contract. Readiness rather than liveness: compose starts the services that
// depend on the server only once it is healthy, and Docker itself restarts nothing for being unhealthy.
const host = process.env['HTTP_HOST']?.trim() || '127.0.0.1';
// Listening on every interface (0.0.0.0 or ::) includes loopback, the one address sure to be there.
const target = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
const port = process.env['HTTP_PORT']?.trim() || '3000';

fetch(`http://${target.includes(':') ? `[${target}]` : target}:${port}/ready`, { signal: AbortSignal.timeout(4_000) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);

export {};
