import { Controller, Inject, Logger } from '@nestjs/common';
import { dispatchKeyRing } from '../../core/config/signing-key-ring.js';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { AGENT_RUN_LEASE_PATTERN, agentRunLeaseRequestSchema, type AgentRunLeaseReply } from '@naalya/agent-tools';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { AgentRunStore } from '../runs/agent-run-store.service.js';
import { RunLifecycle } from './run-lifecycle.service.js';
import { RunSweeper } from './run-sweeper.service.js';
import { promoteIfEnded, verifyWorkerCall } from './worker-call.js';

/**
 * The run lease over the tools queue (so the transport's check of the worker's broker user applies, as to a tool
 * call): the run, its epoch and its owner come from the dispatch token alone, never from the worker. A claim must be
 * answered before the worker calls the model, which is why this is an RPC and not a run event: events have no reply
 * and queue behind other runs' events in the ingest. A claim is also where the school's data choice and its day of
 * tokens are enforced (RunLifecycle.claim), before anything reaches the model.
 */
@Controller()
export class RunLeaseController {
  private readonly logger = new Logger(RunLeaseController.name);

  constructor(
    private readonly runs: AgentRunStore,
    private readonly lifecycle: RunLifecycle,
    private readonly sweeper: RunSweeper,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  @MessagePattern(AGENT_RUN_LEASE_PATTERN)
  async lease(@Payload() payload: unknown): Promise<AgentRunLeaseReply> {
    const request = agentRunLeaseRequestSchema.safeParse(payload);
    if (!request.success) return { granted: false, reason: 'refused' };
    const call = verifyWorkerCall(dispatchKeyRing(this.config), request.data, this.logger, 'run lease');
    if (!call) return { granted: false, reason: 'refused' };
    const { runId, epoch, workerId } = call;
    // A release changes nothing: the step's last event ends the run, and a lease left to expire harms nobody.
    if (request.data.action === 'release') return { granted: false, reason: 'ended' };
    const action = request.data.action;
    const answer = await call.asOwner(() =>
      action === 'claim' ? this.lifecycle.claim(runId, epoch, workerId, request.data.model) : this.runs.lease(runId, epoch, workerId, 'renew'),
    );
    if (answer.granted) return answer;
    this.logger.log(`Run ${runId}: ${action} of epoch ${epoch} by ${workerId} refused (${answer.reason}).`);
    await promoteIfEnded(this.sweeper, call, answer.reason, this.logger);
    return answer;
  }
}
