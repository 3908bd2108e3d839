import { AGENT_RUN_PATTERN, agentRunRequestSchema } from '@naalya/agent-tools';
import { secondsSince, withLogContext } from '@naalya/observability';
import { currentRmqMessage } from '@naalya/rmq';
import { Controller, Logger } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { workerMetrics } from '../../app/observability/worker-metrics.js';
import { AgentRunExecutor } from './agent-run.executor.js';
import { RunStepAuthenticity } from './run-step-authenticity.js';

const MAX_ISSUES_LOGGED = 5;

/**
 * The runs queue's one handler. The transport acknowledges the message after this resolves, so a worker
 * that dies mid-step leaves it unacknowledged and it is redelivered; the executor makes the repeat safe.
 * A malformed request is thrown back: the transport dead-letters it, and nothing runs or is published.
 * A step the server did not publish and sign is dropped before anything else (run-step-authenticity.ts).
 */
@Controller()
export class AgentRunConsumer {
  private readonly logger = new Logger(AgentRunConsumer.name);

  constructor(
    private readonly executor: AgentRunExecutor,
    private readonly authenticity: RunStepAuthenticity,
  ) {}

  @EventPattern(AGENT_RUN_PATTERN)
  async handle(@Payload() payload: unknown): Promise<void> {
    if (!this.authenticity.admits(currentRmqMessage())) return;
    const parsed = agentRunRequestSchema.safeParse(payload);
    if (!parsed.success) {
      // Paths and codes only: the payload may carry a user's message.
      const issues = parsed.error.issues.slice(0, MAX_ISSUES_LOGGED).map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.code}`);
      throw new Error(`Malformed run request, dead-lettered: ${issues.join('; ')}`);
    }
    const request = parsed.data;
    // Every line written for this step (the tool calls', the model's) carries its run.
    await withLogContext({ runId: request.context.run.runId }, async () => {
      const frame = currentRmqMessage();
      if (frame?.fields.redelivered) {
        workerMetrics.redeliveries.inc();
        this.logger.warn(`Run ${request.context.run.runId} was redelivered; continuing from its checkpoint.`);
      }
      const started = performance.now();
      const outcome = await this.executor.execute(request, frame?.signal);
      workerMetrics.runSteps.inc({ kind: request.kind, outcome });
      workerMetrics.runStepDuration.observe({ kind: request.kind }, secondsSince(started));
      this.logger.log(`Run ${request.context.run.runId} (${request.kind}) finished: ${outcome}`);
    });
  }
}
