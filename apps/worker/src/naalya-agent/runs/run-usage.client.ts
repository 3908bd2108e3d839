import {
  AGENT_RUN_USAGE_PATTERN,
  agentRunUsageReplySchema,
  agentRunUsageRequestSchema,
  type AgentRunUsageReply,
  type RunUsage,
} from '@naalya/agent-tools';
import { askServer, type RunRpc } from './run-rpc.js';

/**
 * The usage report as the executor sees it: resolves with the server's answer (go on, or stop and why); rejects with a
 * RunRpcUnansweredError when no answer came, which the caller must read as neither.
 */
export type RunUsageReports = {
  report(dispatchToken: string, usage: RunUsage): Promise<AgentRunUsageReply>;
};

/**
 * A model call's tokens, reported over the tools queue (`agent.run.usage`) by the lease holder: the same worker id as
 * its lease, the model that spent them. Never asked twice: the report carries no id the server could tell a repeat by,
 * so a report whose answer was lost must not be counted again.
 */
export class RunUsageClient implements RunUsageReports {
  constructor(
    private readonly rpc: RunRpc,
    private readonly workerId: string,
    private readonly model: string,
  ) {}

  report(dispatchToken: string, usage: RunUsage): Promise<AgentRunUsageReply> {
    const body = agentRunUsageRequestSchema.parse({ workerId: this.workerId, dispatchToken, model: this.model, usage });
    return askServer(this.rpc, 'the usage report', { pattern: AGENT_RUN_USAGE_PATTERN, body, replySchema: agentRunUsageReplySchema });
  }
}
