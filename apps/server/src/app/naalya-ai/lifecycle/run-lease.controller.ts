import { Controller, Inject, Logger } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { AGENT_RUN_LEASE_PATTERN, agentRunLeaseRequestSchema, type AgentRunLeaseReply } from '@naalya/agent-tools';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { runUnscoped, withSchool } from '../../core/tenancy/tenant-context.js';
import { verifyDispatchToken } from '../dispatch/dispatch-token.js';
import { AgentRunStore } from '../runs/agent-run-store.service.js';

/**
 * The run lease over the tools queue (so the transport's check of the worker's broker user applies, as to a tool
 * call): the run, its epoch and its owner come from the dispatch token alone, never from the worker. A claim must be
 * answered before the worker calls the model, which is why this is an RPC and not a run event: events have no reply
 * and queue behind other runs' events in the ingest.
 */
@Controller()
export class RunLeaseController {
  private readonly logger = new Logger(RunLeaseController.name);

  constructor(
    private readonly runs: AgentRunStore,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  @MessagePattern(AGENT_RUN_LEASE_PATTERN)
  async lease(@Payload() payload: unknown): Promise<AgentRunLeaseReply> {
    const request = agentRunLeaseRequestSchema.safeParse(payload);
    if (!request.success) return { granted: false, reason: 'refused' };
    const token = verifyDispatchToken(this.config.DISPATCH_SIGNING_KEY, request.data.dispatchToken);
    if (!token.ok) {
      this.logger.warn(`security event: run lease refused (${token.reason}) for worker ${request.data.workerId}`);
      return { granted: false, reason: 'refused' };
    }
    const { runId, epoch, identity } = token.claims;
    // A release changes nothing: the step's last event ends the run, and a lease left to expire harms nobody.
    if (request.data.action === 'release') return { granted: false, reason: 'ended' };
    const action = request.data.action;
    const asOwner = (work: () => Promise<AgentRunLeaseReply>) =>
      identity.schoolId ? withSchool(identity.schoolId, identity.sub, work) : runUnscoped(identity.sub, work);
    const answer = await asOwner(() => this.runs.lease(runId, epoch, request.data.workerId, action));
    if (!answer.granted) this.logger.log(`Run ${runId}: ${action} of epoch ${epoch} by ${request.data.workerId} refused (${answer.reason}).`);
    return answer;
  }
}
