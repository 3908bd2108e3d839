// `--tracing`: an OTLP/HTTP receiver in the bench's process, standing in for a collector, so the servers it starts
// trace every call and export their spans as in production. It counts what arrives and keeps nothing.
import { createServer } from 'node:http';

export const startOtlpSink = async () => {
  const counts = { exports: 0, spans: 0, bytes: 0 };
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk) => {
      body += chunk;
    });
    request.on('end', () => {
      counts.exports += 1;
      counts.bytes += Buffer.byteLength(body);
      try {
        for (const resource of JSON.parse(body).resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) counts.spans += scope.spans?.length ?? 0;
      } catch {
        // Not JSON (a protobuf exporter): counted as an export only.
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${server.address().port}`, counts, close: () => new Promise((resolve) => server.close(resolve)) };
};
