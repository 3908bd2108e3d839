import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  AGENT_RUN_LEASE_PATTERN,
  agentRunLeaseReplySchema,
  agentRunLeaseRequestSchema,
  type AgentRunLeaseReply,
  type AgentRunLeaseRequest,
} from '@naalya/agent-tools';

export type RunLeaseAction = AgentRunLeaseRequest['action'];

/**
 * The run lease RPC as the executor sees it. `request` resolves with the server's answer, granted or refused; it rejects
 * when no answer came (no connection, timeout, an error or unreadable reply), which the caller must not read as either.
 */
export type RunLeases = {
  /** Names this process to the server as the lease holder. */
  readonly workerId: string;
  /** How long a claim may wait for its answer (the tool call timeout in production). */
  readonly timeoutMs: number;
  request(action: RunLeaseAction, dispatchToken: string, timeoutMs?: number): Promise<AgentRunLeaseReply>;
};

/** What carries the lease RPC: AgentToolService's request(), on the worker's one tools client. */
export type LeaseRpc = {
  readonly timeoutMs: number;
  request(pattern: string, data: unknown, timeoutMs?: number): Promise<unknown>;
};

/** No answer the lease can be read from: the caller treats it as neither a grant nor a refusal. */
export class RunLeaseUnansweredError extends Error {
  override readonly name = 'RunLeaseUnansweredError';
}

const WORKER_ID_MAX = 200;

/** One per process: the host, the pid and a random suffix (a restarted process in the same container is a new holder). */
export const newWorkerId = (host = hostname(), pid = process.pid): string => {
  const suffix = `:${pid}:${randomBytes(6).toString('hex')}`;
  return `${(host || 'worker').slice(0, WORKER_ID_MAX - suffix.length)}${suffix}`;
};

/** The run lease over the tools queue (`agent.run.lease`), as a plain request and reply like a tool call's. */
export class RunLeaseClient implements RunLeases {
  constructor(
    private readonly rpc: LeaseRpc,
    readonly workerId: string = newWorkerId(),
  ) {}

  get timeoutMs(): number {
    return this.rpc.timeoutMs;
  }

  async request(action: RunLeaseAction, dispatchToken: string, timeoutMs: number = this.rpc.timeoutMs): Promise<AgentRunLeaseReply> {
    const body: AgentRunLeaseRequest = agentRunLeaseRequestSchema.parse({ action, workerId: this.workerId, dispatchToken });
    let reply: unknown;
    try {
      reply = await this.rpc.request(AGENT_RUN_LEASE_PATTERN, body, timeoutMs);
    } catch (error) {
      throw new RunLeaseUnansweredError(`the lease ${action} got no answer: ${error instanceof Error ? error.message : String(error)}`);
    }
    const parsed = agentRunLeaseReplySchema.safeParse(reply);
    if (!parsed.success) throw new RunLeaseUnansweredError(`the lease ${action} got an unreadable reply`);
    return parsed.data;
  }
}
