import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import {
  AGENT_RUN_LEASE_PATTERN,
  agentRunLeaseReplySchema,
  agentRunLeaseRequestSchema,
  type AgentModelIdentity,
  type AgentRunLeaseReply,
  type AgentRunLeaseRequest,
} from '@naalya/agent-tools';
import { askServer, type RunRpc } from './run-rpc.js';

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

const WORKER_ID_MAX = 200;

/** One per process: the host, the pid and a random suffix (a restarted process in the same container is a new holder). */
export const newWorkerId = (host = hostname(), pid = process.pid): string => {
  const suffix = `:${pid}:${randomBytes(6).toString('hex')}`;
  return `${(host || 'worker').slice(0, WORKER_ID_MAX - suffix.length)}${suffix}`;
};

/**
 * The run lease over the tools queue (`agent.run.lease`), as a plain request and reply like a tool call's. Every claim
 * names the model this worker would send the run's data to, so the server can hold it against the school's choice.
 */
export class RunLeaseClient implements RunLeases {
  constructor(
    private readonly rpc: RunRpc,
    private readonly model: AgentModelIdentity,
    readonly workerId: string = newWorkerId(),
  ) {}

  get timeoutMs(): number {
    return this.rpc.timeoutMs;
  }

  async request(action: RunLeaseAction, dispatchToken: string, timeoutMs: number = this.rpc.timeoutMs): Promise<AgentRunLeaseReply> {
    const body: AgentRunLeaseRequest = agentRunLeaseRequestSchema.parse({
      action,
      workerId: this.workerId,
      dispatchToken,
      ...(action === 'claim' ? { model: this.model } : {}),
    });
    return askServer(this.rpc, `the lease ${action}`, { pattern: AGENT_RUN_LEASE_PATTERN, body, replySchema: agentRunLeaseReplySchema }, timeoutMs);
  }
}
