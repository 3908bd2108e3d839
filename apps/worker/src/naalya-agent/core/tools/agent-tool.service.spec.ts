import { Logger } from '@nestjs/common';
import { RmqRpcClient, RmqRpcError } from '@naalya/rmq';
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { AgentToolService } from './agent-tool.service.js';
import { createDepartmentPayload } from './tool-context.fixture.js';

// The send loop as the service drives its RPC client: the client is stubbed at its two seams (call, whenConnected),
// so what each send carries can be read exactly. The real broker is in the integration spec.
type Sent = { pattern: string; data: unknown; timeoutMs: number; correlationId?: string; at: number };

const stubClient = (answers: ((sent: Sent) => Promise<unknown>)[]) => {
  const sent: Sent[] = [];
  vi.spyOn(RmqRpcClient.prototype, 'whenConnected').mockResolvedValue(true);
  vi.spyOn(RmqRpcClient.prototype, 'call').mockImplementation((pattern, data, timeoutMs, options) => {
    const send = { pattern, data: structuredClone(data), timeoutMs, correlationId: options?.correlationId, at: Date.now() };
    sent.push(send);
    const answer = answers[sent.length - 1] ?? (() => Promise.reject(new RmqRpcError('unreachable', 'the connection to RabbitMQ was lost')));
    return answer(send);
  });
  return sent;
};

const service = (timeoutMs = 5_000) =>
  new AgentToolService({ rabbitmqUrl: 'amqp://worker:pw@127.0.0.1:1', toolsQueue: 'agent-tools.unit', timeoutMs, resends: { policy: { maxSends: 4, initialPauseMs: 1, maxPauseMs: 5 } } });

const lost = () => Promise.reject(new RmqRpcError('unreachable', 'the channel to RabbitMQ closed'));
const created = { data: { id: 'dept-1' }, scopeContext: 'ok', auditId: 'audit-1' };

let warn: MockInstance;
beforeEach(() => {
  warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
});
afterEach(() => vi.restoreAllMocks());

describe('AgentToolService sends a lost tool call again', () => {
  it('with the same call id, arguments, dispatch token and correlation id on every send, and counts and logs each re-send', async () => {
    const sent = stubClient([lost, lost, async () => created]);
    const tools = service();
    const payload = { ...createDepartmentPayload(), meta: { ...createDepartmentPayload().meta, dispatchToken: 'token-1' } };

    expect(await tools.call('create.department', payload)).toEqual(created);
    expect(sent).toHaveLength(3);
    for (const send of sent) {
      expect(send.pattern).toBe('create.department');
      expect(send.data).toEqual(payload);
    }
    expect(new Set(sent.map((send) => send.correlationId)).size).toBe(1);
    expect(tools.resends).toBe(2);
    const lines = warn.mock.calls.map((call) => String(call[0])).filter((line) => line.startsWith('Re-sending'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain(`callId ${payload.meta.callId}`);
    expect(lines[0]).toContain('send 2');
    expect(lines[1]).toContain('send 3');
  });

  it("gives each send only the time left until the envelope's deadline, never more", async () => {
    const sent = stubClient([lost, lost, lost, lost]);
    const payload = createDepartmentPayload();
    payload.meta.deadline = Date.now() + 400;

    const result = await service(5_000).call('create.department', payload);
    expect('error' in result && result.code).toBe('PLATFORM_UNREACHABLE');
    for (const send of sent) expect(send.at + send.timeoutMs).toBeLessThanOrEqual(payload.meta.deadline + 1);
  });

  it("never gives a send more than the worker's own timeout, whatever deadline the envelope carries", async () => {
    const sent = stubClient([async () => created]);
    const payload = createDepartmentPayload();
    payload.meta.deadline = Date.now() + 600_000;

    await service(2_000).call('create.department', payload);
    expect(sent[0].timeoutMs).toBeLessThanOrEqual(2_000);
  });

  it('sends a write the server could not confirm again, and returns the answer the repeat got (the ledger)', async () => {
    const sent = stubClient([async () => ({ error: 'The platform could not confirm whether that change was saved.', code: 'OUTCOME_UNKNOWN' }), async () => created]);

    expect(await service().call('create.department', createDepartmentPayload())).toEqual(created);
    expect(sent).toHaveLength(2);
  });

  it('stops at its send bound and only then tells the model the outcome is unknown', async () => {
    const sent = stubClient([]);
    const result = await service().call('create.department', createDepartmentPayload());

    expect(sent).toHaveLength(4);
    expect('error' in result && result.error).toContain('The outcome is unknown');
  });

  it('does not send again after a definite answer, a refusal included', async () => {
    const sent = stubClient([async () => ({ error: 'Forbidden resource', code: 'PERMISSION_DENIED' })]);

    expect(await service().call('create.department', createDepartmentPayload())).toEqual({ error: 'Forbidden resource', code: 'PERMISSION_DENIED' });
    expect(sent).toHaveLength(1);
  });

  const failed = async () => ({ error: 'That action could not be completed. Do not retry; tell the user what you were trying to do.', code: 'TOOL_FAILED' });

  it('a write whose first send went unsettled and whose repeat failed on its own delivery is sent again, and the ledger settles it', async () => {
    const sent = stubClient([lost, failed, async () => created]);

    expect(await service().call('create.department', createDepartmentPayload())).toEqual(created);
    expect(sent).toHaveLength(3);
  });

  it('a write still failing only on its repeats when its sends run out is "outcome unknown" with its call id, never a failure (a ghost)', async () => {
    const sent = stubClient([async () => ({ error: 'The platform could not confirm whether that change was saved.', code: 'OUTCOME_UNKNOWN' }), failed, failed, failed]);
    const payload = createDepartmentPayload();

    const result = await service().call('create.department', payload);
    expect(sent).toHaveLength(4);
    expect(result).toMatchObject({ code: 'PLATFORM_UNREACHABLE' });
    expect('error' in result && result.error).toContain('The outcome is unknown');
    expect('error' in result && result.error).toContain(payload.meta.callId);
  });

  it('a failure on the first send is the answer: nothing went unsettled before it', async () => {
    const sent = stubClient([failed, async () => created]);

    expect(await service().call('create.department', createDepartmentPayload())).toMatchObject({ code: 'TOOL_FAILED' });
    expect(sent).toHaveLength(1);
  });

  it('does not send again after a timeout: the send had all the time left', async () => {
    const sent = stubClient([() => Promise.reject(new RmqRpcError('timeout', 'no reply within 5000 ms'))]);

    const result = await service().call('create.department', createDepartmentPayload());
    expect('error' in result && result.code).toBe('TOOL_TIMED_OUT');
    expect(sent).toHaveLength(1);
  });
});
