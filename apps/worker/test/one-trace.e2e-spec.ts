import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fromRunInterrupt } from '@naalya/agent-tools';
import { GenAi } from '@naalya/telemetry';
import { createTestStack, readRunEvents, type TestStack } from '@naalya/test-stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Both built apps as processes with tracing on, exporting OTLP/HTTP (JSON) to a receiver in this process: one
// conversation must make ONE connected trace, from the POST that starts the run to the SQL insert of its audit row.

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; arrayValue?: { values: OtlpValue[] } };
type OtlpAttribute = { key: string; value: OtlpValue };
type OtlpSpan = { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: OtlpAttribute[] };
type OtlpExport = { resourceSpans: { resource: { attributes: OtlpAttribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };
type ReceivedSpan = OtlpSpan & { service: string; attrs: Record<string, unknown> };

const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

const valueOf = (value: OtlpValue): unknown =>
  value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)) ?? value.boolValue ?? value.arrayValue?.values.map(valueOf);

/** A minimal OTLP/HTTP JSON trace receiver: what the apps' exporters would send to a collector. */
const startReceiver = async () => {
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces' && String(request.headers['content-type']).includes('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
        for (const resourceSpans of body.resourceSpans) {
          const service = String(valueOf(resourceSpans.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value ?? {}));
          for (const span of resourceSpans.scopeSpans.flatMap((scope) => scope.spans)) {
            spans.push({ ...span, service, attrs: Object.fromEntries((span.attributes ?? []).map((attribute) => [attribute.key, valueOf(attribute.value)])) });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { spans, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((resolve) => server.close(resolve)) };
};

let receiver: Awaited<ReturnType<typeof startReceiver>>;
let stack: TestStack;

beforeAll(async () => {
  receiver = await startReceiver();
  // A short batch delay, so the spans arrive within the test; everything else as an operator would set it.
  const tracing = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' };
  stack = await createTestStack({ name: 'trace' });
  await stack.startServer({ env: tracing });
  await stack.startWorker(tracing);
}, 120_000);

afterAll(async () => {
  await stack?.teardown();
  await receiver?.close();
});

const isAuditInsert = (span: ReceivedSpan) => Object.values(span.attrs).some((value) => typeof value === 'string' && /INSERT INTO audit_log/i.test(value));

/** Waits until the trace holds the audit insert and has stopped growing (both exporters flushed). */
const traceOf = async (traceId: string): Promise<ReceivedSpan[]> => {
  let previous = -1;
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; await new Promise((resolve) => setTimeout(resolve, 300))) {
    const spans = receiver.spans.filter((span) => span.traceId === traceId);
    if (spans.some(isAuditInsert) && spans.length === previous) return spans;
    previous = spans.length;
  }
  return receiver.spans.filter((span) => span.traceId === traceId);
};

describe('one trace per run, across the server, the runs queue, the worker and the tool hop', () => {
  it('a specialist\'s audited write: one connected trace from POST run to the audit insert, its id on the run and the audit row', async () => {
    const token = await stack.login('subject.teacher@greenhill.school');
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const response = await fetch(`${stack.server().baseUrl}${path}`, {
        method,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    };
    const { id: threadId } = await call<{ id: string }>('POST', '/agent/threads', {});
    const started = await call<{ runId: string; traceId?: string }>('POST', `/agent/threads/${threadId}/runs`, {
      message: 'record marks for S1 Kisasi in Mathematics: Ivan Ochieng 81',
    });
    expect(started.traceId).toMatch(/^[0-9a-f]{32}$/);
    const traceId = started.traceId as string;
    const events = await readRunEvents(stack.server().baseUrl, token, { threadId, runId: started.runId }, { signal: AbortSignal.timeout(30_000) });
    expect(events.at(-1)?.event).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    const written = events.map(({ event }) => event).find((event) => event.type === 'CUSTOM');
    const auditId = written?.type === 'CUSTOM' ? written.value['auditId'] : undefined;
    expect(auditId).toEqual(expect.any(String));

    // The trace id is stored on the run (and returned with it) and on the audit row the tool call wrote.
    const thread = await call<{ runs: { id: string; traceId: string | null }[] }>('GET', `/agent/threads/${threadId}`);
    expect(thread.runs).toEqual([expect.objectContaining({ id: started.runId, traceId })]);
    const { rows: audit } = await stack.owner.query(`SELECT trace_id, action, resource_type FROM audit_log WHERE id = $1`, [auditId]);
    expect(audit).toEqual([expect.objectContaining({ trace_id: traceId })]);

    const spans = await traceOf(traceId);
    const byId = new Map(spans.map((span) => [span.spanId, span]));
    // Connected: one root, and every other span's parent is in the same trace.
    const roots = spans.filter((span) => !span.parentSpanId);
    expect(roots.map((span) => [span.service, span.kind])).toEqual([['naalya-server', SPAN_KIND.server]]);
    expect(spans.filter((span) => span.parentSpanId && !byId.has(span.parentSpanId)).map((span) => span.name)).toEqual([]);
    expect(roots[0]?.attrs).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 201 });
    expect(roots[0]?.attrs['url.path']).toBe(`/agent/threads/${threadId}/runs`);

    // From the audit insert up to the root, the chain of spans the run went through, each in its process.
    const chain: string[] = [];
    for (let span = spans.find(isAuditInsert); span; span = span.parentSpanId ? byId.get(span.parentSpanId) : undefined) {
      chain.unshift(`${span.service.replace('naalya-', '')}: ${span.name.replace(stack.toolsQueue, 'TOOLS').replace(stack.runsQueue, 'RUNS')}`);
    }
    expect(chain[0]).toMatch(/^server: POST/);
    expect(chain).toEqual(
      expect.arrayContaining([
        'server: publish RUNS',
        'worker: process RUNS',
        'worker: invoke_agent rover',
        'worker: execute_tool task',
        'worker: invoke_agent subject_teacher',
        'worker: execute_tool record_marks',
        'server: execute',
      ]),
    );
    // In that order: the HTTP request, the runs queue, Rover, the handover, the specialist, its tool, the hop, execute().
    const order = ['server: publish RUNS', 'worker: process RUNS', 'worker: invoke_agent rover', 'worker: execute_tool task', 'worker: invoke_agent subject_teacher', 'worker: execute_tool record_marks'];
    expect(order.map((entry) => chain.indexOf(entry))).toEqual([...order.map((entry) => chain.indexOf(entry))].sort((a, b) => a - b));
    const hop = chain.slice(chain.indexOf('worker: execute_tool record_marks') + 1, chain.indexOf('server: execute'));
    expect(hop).toEqual([expect.stringMatching(/^worker: publish TOOLS/), 'server: process TOOLS']);
    expect(chain.at(-1)).toMatch(/^server: /);
    expect(spans.find(isAuditInsert)?.service).toBe('naalya-server');

    // The messaging spans (producer and consumer, W3C traceparent in the headers) and the GenAI spans (v1.37.0).
    const named = (name: string) => spans.filter((span) => span.name.replace(stack.toolsQueue, 'TOOLS').replace(stack.runsQueue, 'RUNS') === name);
    expect(named('publish RUNS')[0]).toMatchObject({ kind: SPAN_KIND.producer, attrs: { 'messaging.system': 'rabbitmq', 'messaging.operation.type': 'send' } });
    // The worker's own calls to the server (the step's lease, each model call's usage report) are in the trace too.
    const processed = named('process TOOLS');
    expect(processed.map((span) => span.attrs['naalya.rmq.pattern'])).toEqual(expect.arrayContaining(['agent.run.lease', 'agent.run.usage', 'record.marks']));
    expect(processed.find((span) => span.attrs['naalya.rmq.pattern'] === 'record.marks')).toMatchObject({ kind: SPAN_KIND.consumer, attrs: { 'messaging.operation.type': 'process' } });
    const chats = spans.filter((span) => span.attrs[GenAi.OPERATION_NAME] === 'chat');
    expect(new Set(chats.map((span) => span.attrs[GenAi.AGENT_NAME]))).toEqual(new Set(['rover', 'subject_teacher']));
    for (const chat of chats) {
      expect(chat).toMatchObject({ kind: SPAN_KIND.client, attrs: { [GenAi.USAGE_INPUT_TOKENS]: expect.any(Number), [GenAi.USAGE_OUTPUT_TOKENS]: expect.any(Number) } });
    }
    expect(named('execute_tool record_marks')[0]?.attrs).toMatchObject({ [GenAi.TOOL_NAME]: 'record_marks', [GenAi.AGENT_NAME]: 'subject_teacher', [GenAi.TOOL_CALL_ID]: expect.any(String) });
    expect(named('invoke_agent rover')[0]?.attrs).toMatchObject({ [GenAi.OPERATION_NAME]: 'invoke_agent', [GenAi.CONVERSATION_ID]: threadId });
    // The message texts stay out of the spans: they carry pupils' names and marks.
    expect(JSON.stringify(spans)).not.toContain('Ivan Ochieng');
  }, 90_000);

  it('a confirmed write: the answer starts the trace the resumed step continues, its approval row and the audit row carry it', async () => {
    const token = await stack.login('admin@greenhill.school');
    const call = async <T>(path: string, body: unknown): Promise<T> => {
      const response = await fetch(`${stack.server().baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as T;
    };
    const { id: threadId } = await call<{ id: string }>('/agent/threads', {});
    const started = await call<{ runId: string; traceId?: string }>(`/agent/threads/${threadId}/runs`, { message: 'delete the Languages department' });
    const asked = await readRunEvents(stack.server().baseUrl, token, { threadId, runId: started.runId }, { signal: AbortSignal.timeout(30_000) });
    const finish = asked.at(-1)?.event;
    const interruptId = finish?.type === 'RUN_FINISHED' && finish.outcome.type === 'interrupt' ? fromRunInterrupt(finish.outcome.interrupts[0]).interruptId : undefined;
    expect(interruptId).toEqual(expect.any(String));

    const resumed = await call<{ resumed: boolean; traceId?: string }>(`/agent/threads/${threadId}/resume`, { interruptId, answer: 'yes' });
    expect(resumed).toMatchObject({ resumed: true, traceId: expect.stringMatching(/^[0-9a-f]{32}$/) });
    expect(resumed.traceId).not.toBe(started.traceId);
    const done = await readRunEvents(stack.server().baseUrl, token, { threadId, runId: started.runId }, { lastEventId: asked.at(-1)?.seq, signal: AbortSignal.timeout(30_000) });
    const written = done.map(({ event }) => event).find((event) => event.type === 'CUSTOM');
    const auditId = written?.type === 'CUSTOM' ? written.value['auditId'] : undefined;

    const { rows: approvals } = await stack.owner.query(`SELECT trace_id, approved FROM tool_call_approvals WHERE run_id = $1`, [started.runId]);
    expect(approvals).toEqual([{ trace_id: resumed.traceId, approved: true }]);
    const { rows: audit } = await stack.owner.query(`SELECT trace_id, action FROM audit_log WHERE id = $1`, [auditId]);
    expect(audit).toEqual([{ trace_id: resumed.traceId, action: 'delete' }]);
    // The run keeps the trace it started in.
    const { rows: run } = await stack.owner.query(`SELECT trace_id FROM agent_runs WHERE id = $1`, [started.runId]);
    expect(run).toEqual([{ trace_id: started.traceId }]);
    const spans = await traceOf(resumed.traceId as string);
    expect(spans.filter((span) => !span.parentSpanId).map((span) => span.attrs['url.path'])).toEqual([`/agent/threads/${threadId}/resume`]);
  }, 90_000);
});
