// The image's HEALTHCHECK (apps/worker/Dockerfile): GET /ready on the worker's health port (broker connected,
// checkpoint database answering, model server reachable), exit 0 when ready and 1 otherwise, Docker's contract.
// Readiness rather than liveness: compose starts dependants only once it is healthy, and Docker restarts nothing for it.
const host = process.env['WORKER_HEALTH_HOST']?.trim() || '127.0.0.1';
// Listening on every interface (0.0.0.0 or ::) includes loopback, the one address sure to be there.
const target = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
// Unset: the worker's default; 0 or empty: the worker serves no /ready (worker-config.ts), so this cannot pass.
const port = process.env['WORKER_HEALTH_PORT']?.trim() ?? '3001';

if (port === '' || Number(port) === 0) {
  console.error('WORKER_HEALTH_PORT is 0 or empty: the worker serves no /ready, so there is nothing to check.');
  process.exit(1);
}
fetch(`http://${target.includes(':') ? `[${target}]` : target}:${port}/ready`, { signal: AbortSignal.timeout(4_000) }).then(
  (response) => process.exit(response.ok ? 0 : 1),
  () => process.exit(1),
);

export {};
