import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanStatusCode, context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterEach, describe, expect, it } from 'vitest';
import { GenAi } from './conventions.js';
import {
  currentAgent,
  currentTraceId,
  extractTraceContext,
  failSpan,
  inSpan,
  injectTraceContext,
  setTracingEnabled,
  startSpan,
  withActiveSpan,
  withAgent,
} from './spans.js';
import { startTracing } from './start-tracing.js';

const resetGlobals = () => {
  setTracingEnabled(false);
  trace.disable();
  context.disable();
  propagation.disable();
};

describe('with no exporter endpoint', () => {
  it('starts nothing and creates no span', async () => {
    expect(startTracing('test', {})).toBeUndefined();
    // No provider was registered: the global one is still the API's proxy with nothing behind it.
    expect(trace.getTracerProvider().constructor.name).toBe('ProxyTracerProvider');
    expect(startSpan('x')).toBeUndefined();
    const seen = await inSpan('x', {}, (span) => {
      expect(span.isRecording()).toBe(false);
      return currentTraceId();
    });
    expect(seen).toBeUndefined();
    expect(injectTraceContext({ a: 1 })).toEqual({ a: 1 });
    expect(withAgent('rover', () => currentAgent())).toBeUndefined();
  });
});

describe('with a provider', () => {
  const exporter = new InMemorySpanExporter();
  const install = () => {
    const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    provider.register();
    setTracingEnabled(true);
    return provider;
  };
  afterEach(() => {
    exporter.reset();
    resetGlobals();
  });

  it('nests spans through awaits, names the agent and records a failure by its class only', async () => {
    install();
    let inner: string | undefined;
    await expect(
      inSpan('outer', {}, async () =>
        withAgent('angie', () =>
          inSpan('inner', {}, async (span) => {
            await new Promise((resolve) => setTimeout(resolve, 1));
            span.setAttribute(GenAi.AGENT_NAME, currentAgent() ?? 'none');
            inner = currentTraceId();
            throw new TypeError('secret user text');
          }),
        ),
      ),
    ).rejects.toThrow('secret user text');
    const spans = exporter.getFinishedSpans();
    const byName = new Map(spans.map((span) => [span.name, span]));
    const [outer, child] = [byName.get('outer'), byName.get('inner')];
    expect(child?.parentSpanContext?.spanId).toBe(outer?.spanContext().spanId);
    expect(child?.spanContext().traceId).toBe(inner);
    expect(child?.attributes[GenAi.AGENT_NAME]).toBe('angie');
    expect(child?.status.code).toBe(SpanStatusCode.ERROR);
    expect(child?.attributes['error.type']).toBe('TypeError');
    expect(JSON.stringify(child?.attributes)).not.toContain('secret');
  });

  it('carries the trace across a message in traceparent, and ignores what is not a W3C header', () => {
    install();
    const producer = startSpan('publish q');
    const headers = withActiveSpan(producer, () => injectTraceContext({ 'x-naalya-signature': 'k.sig' }));
    producer?.end();
    expect(headers['x-naalya-signature']).toBe('k.sig');
    expect(headers['traceparent']).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const consumer = startSpan('process q', {}, extractTraceContext(headers));
    expect(consumer?.spanContext().traceId).toBe(producer?.spanContext().traceId);
    consumer?.end();

    for (const bogus of [{ traceparent: Buffer.from(String(headers['traceparent'])) }, { traceparent: 'not-a-traceparent' }, { traceparent: `${headers['traceparent']}${'0'.repeat(600)}` }]) {
      const fresh = startSpan('process q', {}, extractTraceContext(bogus));
      expect(fresh?.spanContext().traceId).not.toBe(producer?.spanContext().traceId);
      fresh?.end();
    }
    failSpan(undefined, new Error('no span: nothing to do'));
  });
});

describe('startTracing with an OTLP endpoint', () => {
  afterEach(resetGlobals);

  it('exports spans as OTLP/HTTP JSON to the endpoint', async () => {
    const received: unknown[] = [];
    const server = createServer((request: IncomingMessage, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      request.on('end', () => {
        received.push({ path: request.url, type: request.headers['content-type'], body: JSON.parse(body) });
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const previous = process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
    process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = `http://127.0.0.1:${port}`;
    try {
      const handle = startTracing('telemetry-spec', process.env);
      expect(handle).toBeDefined();
      const traceId = await inSpan('work', {}, () => currentTraceId());
      await handle?.shutdown();
      expect(received).toHaveLength(1);
      const [export_] = received as { path: string; type: string; body: { resourceSpans: { resource: { attributes: { key: string; value: { stringValue?: string } }[] }; scopeSpans: { spans: { name: string; traceId: string }[] }[] }[] } }[];
      expect(export_?.path).toBe('/v1/traces');
      expect(export_?.type).toContain('application/json');
      const [resourceSpans] = export_?.body.resourceSpans ?? [];
      expect(resourceSpans?.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'telemetry-spec' } });
      const spans = resourceSpans?.scopeSpans.flatMap((scope) => scope.spans) ?? [];
      expect(spans.map((span) => [span.name, span.traceId])).toEqual([['work', traceId]]);
    } finally {
      if (previous === undefined) delete process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
      else process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = previous;
      server.close();
    }
  });
});
