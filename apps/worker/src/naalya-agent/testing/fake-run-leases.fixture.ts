import type { AgentRunLeaseReply } from '@naalya/agent-tools';
import type { RunLeaseAction, RunLeases } from '../runs/run-lease.client.js';

/** What a test dispatch token looks like: opaque to the worker, which only passes it on. */
export const TEST_DISPATCH_TOKEN = 'test-dispatch-token';

/** One scripted answer: a reply, a failure (no answer), or a function deciding when the request arrives. */
export type FakeLeaseAnswer = AgentRunLeaseReply | Error | (() => AgentRunLeaseReply | Promise<AgentRunLeaseReply>);

export type RecordedLeaseRequest = { action: RunLeaseAction; dispatchToken: string; timeoutMs: number | undefined; at: number };

/**
 * The run lease server as a table: each action answers from its queue of scripted answers, then with its default
 * (every request granted, with `leaseMs`). Records every request.
 */
export class FakeRunLeases implements RunLeases {
  readonly workerId = 'worker-test:1:abc';
  readonly timeoutMs = 1_000;
  readonly requests: RecordedLeaseRequest[] = [];
  private readonly scripts: Record<RunLeaseAction, FakeLeaseAnswer[]> = { claim: [], renew: [], release: [] };

  constructor(readonly leaseMs = 30_000) {}

  /** Queues answers for an action, used one per request in order. */
  answer(action: RunLeaseAction, ...answers: FakeLeaseAnswer[]): this {
    this.scripts[action].push(...answers);
    return this;
  }

  requestsOf(action: RunLeaseAction): RecordedLeaseRequest[] {
    return this.requests.filter((request) => request.action === action);
  }

  async request(action: RunLeaseAction, dispatchToken: string, timeoutMs?: number): Promise<AgentRunLeaseReply> {
    this.requests.push({ action, dispatchToken, timeoutMs, at: Date.now() });
    const next = this.scripts[action].shift() ?? { granted: true, leaseMs: this.leaseMs };
    if (next instanceof Error) throw next;
    return typeof next === 'function' ? next() : next;
  }
}
