import { AGENT_RUN_LEASE_PATTERN, AGENT_RUN_USAGE_PATTERN } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import { RunLeaseClient } from './run-lease.client.js';
import { RunRpcUnansweredError, type RunRpc } from './run-rpc.js';
import { RunUsageClient } from './run-usage.client.js';

/** The tools client as the run RPCs see it: records what was sent, answers from a script. */
const rpcAnswering = (answer: (pattern: string) => unknown): RunRpc & { sent: { pattern: string; data: unknown }[] } => {
  const sent: { pattern: string; data: unknown }[] = [];
  return {
    timeoutMs: 1_000,
    sent,
    request: async (pattern, data) => {
      sent.push({ pattern, data });
      const reply = answer(pattern);
      if (reply instanceof Error) throw reply;
      return reply;
    },
  };
};

const MODEL = { model: 'openai:gpt-4.1', selfHosted: false };

describe('the run RPCs over the tools client', () => {
  it('a claim names the model the run would be sent to; a renew and a release do not', async () => {
    const rpc = rpcAnswering(() => ({ granted: true, leaseMs: 30_000 }));
    const leases = new RunLeaseClient(rpc, MODEL, 'worker-1');
    await leases.request('claim', 'token');
    await leases.request('renew', 'token');
    await leases.request('release', 'token');
    expect(rpc.sent).toEqual([
      { pattern: AGENT_RUN_LEASE_PATTERN, data: { action: 'claim', workerId: 'worker-1', dispatchToken: 'token', model: MODEL } },
      { pattern: AGENT_RUN_LEASE_PATTERN, data: { action: 'renew', workerId: 'worker-1', dispatchToken: 'token' } },
      { pattern: AGENT_RUN_LEASE_PATTERN, data: { action: 'release', workerId: 'worker-1', dispatchToken: 'token' } },
    ]);
  });

  it('a claim refused for the school data choice reads as that refusal', async () => {
    const leases = new RunLeaseClient(rpcAnswering(() => ({ granted: false, reason: 'model_not_allowed' })), MODEL, 'worker-1');
    expect(await leases.request('claim', 'token')).toEqual({ granted: false, reason: 'model_not_allowed' });
  });

  it('a usage report goes as the lease holder, naming the model, and reads the answer', async () => {
    const rpc = rpcAnswering(() => ({ proceed: false, reason: 'step_token_budget_spent', run: { inputTokens: 900, outputTokens: 120 } }));
    const usage = new RunUsageClient(rpc, 'worker-1', 'openai:gpt-4.1');
    expect(await usage.report('token', { inputTokens: 800, outputTokens: 100 })).toEqual({
      proceed: false,
      reason: 'step_token_budget_spent',
      run: { inputTokens: 900, outputTokens: 120 },
    });
    expect(rpc.sent).toEqual([
      { pattern: AGENT_RUN_USAGE_PATTERN, data: { workerId: 'worker-1', dispatchToken: 'token', model: 'openai:gpt-4.1', usage: { inputTokens: 800, outputTokens: 100 } } },
    ]);
  });

  it('no answer, an error reply or an unreadable one is neither yes nor no: RunRpcUnansweredError, asked once', async () => {
    for (const answer of [new Error('no reply within 1000 ms'), { proceed: 'maybe' }]) {
      const rpc = rpcAnswering(() => answer);
      await expect(new RunUsageClient(rpc, 'worker-1', 'scripted').report('token', { inputTokens: 1, outputTokens: 1 })).rejects.toBeInstanceOf(RunRpcUnansweredError);
      expect(rpc.sent).toHaveLength(1);
    }
  });
});
