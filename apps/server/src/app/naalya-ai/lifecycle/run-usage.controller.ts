import { Controller, Inject, Logger } from '@nestjs/common';
import { dispatchKeyRing } from '../../core/config/signing-key-ring.js';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { AGENT_RUN_USAGE_PATTERN, agentRunUsageRequestSchema, type AgentRunUsageReply } from '@naalya/agent-tools';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { RunLifecycle } from './run-lifecycle.service.js';
import { RunSweeper } from './run-sweeper.service.js';
import { promoteIfEnded, verifyWorkerCall } from './worker-call.js';

/**
 * The worker's usage report after each model call, over the tools queue beside the lease and checked the same way
 * (verifyWorkerCall): the worker waits for the answer before it acts on the model's reply, so a run that has spent its
 * school's day or its step's budget ends after this call (RunLifecycle.reportUsage).
 */
@Controller()
export class RunUsageController {
  private readonly logger = new Logger(RunUsageController.name);

  constructor(
    private readonly lifecycle: RunLifecycle,
    private readonly sweeper: RunSweeper,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  @MessagePattern(AGENT_RUN_USAGE_PATTERN)
  async report(@Payload() payload: unknown): Promise<AgentRunUsageReply> {
    const request = agentRunUsageRequestSchema.safeParse(payload);
    if (!request.success) return { proceed: false, reason: 'refused' };
    const call = verifyWorkerCall(dispatchKeyRing(this.config), request.data, this.logger, 'usage report');
    if (!call) return { proceed: false, reason: 'refused' };
    const answer = await call.asOwner(() => this.lifecycle.reportUsage(call.runId, call.epoch, call.workerId, request.data.usage));
    if (answer.proceed) return answer;
    this.logger.log(`Run ${call.runId}: usage report of epoch ${call.epoch} by ${call.workerId} (${request.data.model}) answered stop (${answer.reason}).`);
    await promoteIfEnded(this.sweeper, call, answer.reason, this.logger);
    return answer;
  }
}
