import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  ERROR_SENTENCES,
  FINAL_RUN_STATUSES,
  type AgentModelIdentity,
  type AgentRunRequest,
  type AgentRunUsageReply,
  type CommittedWrite,
  type RunErrorCode,
  type RunUsage,
} from '@naalya/agent-tools';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { UserEntity } from '../../core/identity/user.entity.js';
import { repo, runUnscoped, withSchool } from '../../core/tenancy/tenant-context.js';
import { serverMetrics } from '../../core/observability/server-metrics.js';
import { AgentContextService } from '../dispatch/agent-context.service.js';
import { AgentRunPublisher } from '../dispatch/agent-run-publisher.service.js';
import { AgentRunEventStore } from '../events/agent-run-event-store.service.js';
import type { RunStep } from '../runs/agent-run.entity.js';
import { describeModel } from '../model-policy/model-access.js';
import { SchoolModelPolicies } from '../model-policy/school-model-policies.service.js';
import { AgentRunStore, type LeaseAnswer, type RunTenant } from '../runs/agent-run-store.service.js';

/** A step to publish once the unit of work that dispatched it has committed. */
export type PendingStep = AgentRunRequest;

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * What the server does to a run on its own authority, inside a unit of work its caller opened as the run's owner:
 * dispatch a step (a new epoch and a freshly minted, signed context), cancel (revoke every token, void the questions,
 * end the stream), end a run with a sentence, and start the thread's next queued run. Steps are returned, never
 * published here: they go out after the unit of work commits (publish), because the worker's first tool call must
 * find the run in flight. The ending of a run is an event the server appends, so the stream, the run row and the
 * Hub learn of it the same way as of a worker's.
 */
@Injectable()
export class RunLifecycle {
  private readonly logger = new Logger(RunLifecycle.name);

  constructor(
    private readonly contextService: AgentContextService,
    private readonly publisher: AgentRunPublisher,
    private readonly runs: AgentRunStore,
    private readonly events: AgentRunEventStore,
    private readonly policies: SchoolModelPolicies,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  /**
   * A worker's claim of a run step, in a unit of work as the run's owner. Once the lease is granted the school decides,
   * before the worker may send anything to a model: a model its data choice does not allow, or a day of tokens already
   * spent, ends the run with its sentence (the lease goes with it) and the claim is refused.
   */
  async claim(runId: string, epoch: number, workerId: string, model: AgentModelIdentity | undefined): Promise<LeaseAnswer> {
    const answer = await this.runs.lease(runId, epoch, workerId, 'claim');
    if (!answer.granted) return answer;
    const run = await this.runs.schoolsOf(runId);
    if (!run) return { granted: false, reason: 'refused' };
    if (!(await this.policies.allowsModel(run, model))) {
      this.logger.warn(`Run ${runId} of school ${run.schoolId ?? run.targetSchoolId ?? '(every school)'}: ${describeModel(model)} is not allowed to see its data; the run ends.`);
      await this.fail(runId, run.threadId, 'MODEL_NOT_ALLOWED');
      return { granted: false, reason: 'model_not_allowed' };
    }
    if (run.schoolId && (await this.policies.daySpent(run.schoolId))) {
      this.logger.log(`Run ${runId} of school ${run.schoolId}: the school's day of tokens is spent; the run ends.`);
      await this.fail(runId, run.threadId, 'SCHOOL_TOKEN_BUDGET_SPENT');
      return { granted: false, reason: 'token_budget_spent' };
    }
    return answer;
  }

  /**
   * A worker's usage report after a model call, in one unit of work as the run's owner: the tokens are added to the
   * run, its step and its school's day (a platform administrator's run has no school to charge), or to nothing for a
   * caller that does not hold the step's live lease. A run whose school's day reached its budget, or whose step went
   * over AGENT_STEP_TOKEN_BUDGET, ends here with its sentence and its lease taken back.
   */
  async reportUsage(runId: string, epoch: number, workerId: string, usage: RunUsage): Promise<AgentRunUsageReply> {
    const counted = await this.runs.addUsage(runId, epoch, workerId, usage);
    if (!counted) return { proceed: false, reason: await this.runs.refusalOf(runId, epoch) };
    const { run } = counted;
    if (counted.schoolId && (await this.policies.addToDay(counted.schoolId, usage.inputTokens + usage.outputTokens)).spent) {
      this.logger.log(`Run ${runId} of school ${counted.schoolId}: the school's day of tokens is spent; the run ends.`);
      await this.fail(runId, counted.threadId, 'SCHOOL_TOKEN_BUDGET_SPENT');
      return { proceed: false, reason: 'token_budget_spent', run };
    }
    const stepBudget = this.config.AGENT_STEP_TOKEN_BUDGET;
    if (stepBudget > 0 && counted.stepTokens > stepBudget) {
      this.logger.log(`Run ${runId}: its step used ${counted.stepTokens} tokens, over the step budget of ${stepBudget}; the run ends.`);
      await this.fail(runId, counted.threadId, 'STEP_TOKEN_BUDGET_SPENT');
      return { proceed: false, reason: 'step_token_budget_spent', run };
    }
    return { proceed: true, run };
  }

  /** Dispatches a step of a run this unit of work holds; `again` after its lease expired. */
  async dispatchStep(runId: string, step: RunStep, owner: JwtPayload, options: { again?: boolean } = {}): Promise<PendingStep> {
    const dispatched = await this.runs.beginStep(runId, step, options);
    // Re-minted, never replayed: the owner's identity and reach are read again for every step.
    const context = await this.contextService.mint(
      {
        campusId: dispatched.campusId ?? undefined,
        targetSchoolId: dispatched.targetSchoolId ?? undefined,
        runId,
        threadId: dispatched.threadId,
        epoch: dispatched.epoch,
      },
      owner,
    );
    return step.kind === 'start' ? { kind: 'start', context, message: dispatched.message } : { kind: 'resume', context, answers: step.answers };
  }

  /**
   * Cancels a run this unit of work holds, unless it has ended: its tokens are revoked first (the update waits for
   * every tool write of the run still inside its transaction, each holding a KEY SHARE lock on the row), then the stream
   * ends with a cancelled outcome naming the writes that stayed. Null when there was nothing to cancel.
   */
  async cancelHeld(runId: string): Promise<{ committedWrites: CommittedWrite[] } | null> {
    const run = await this.runs.lock(runId);
    if (!run || (run.status !== 'running' && run.status !== 'interrupted' && run.status !== 'queued')) return null;
    serverMetrics.cancels.inc();
    await this.runs.revoke(runId);
    const committedWrites = await this.runs.committedWrites(runId);
    await this.events.appendServerEvent(runId, {
      runId,
      threadId: run.threadId,
      type: 'RUN_FINISHED',
      outcome: { type: 'cancelled' },
      metadata: { committedWrites },
    });
    return { committedWrites };
  }

  /**
   * Ends a run with a sentence the thread shows (its questions voided, its tokens refused), under its row lock; a run
   * that has already ended is left as it is.
   */
  async fail(runId: string, threadId: string, code: RunErrorCode): Promise<void> {
    const run = await this.runs.lock(runId);
    if (!run || FINAL_RUN_STATUSES.includes(run.status)) return;
    await this.runs.revoke(runId);
    await this.events.appendServerEvent(runId, { runId, threadId, type: 'RUN_ERROR', message: ERROR_SENTENCES[code as keyof typeof ERROR_SENTENCES], code });
  }

  /** Closes a direct run this unit of work holds. */
  async close(runId: string, threadId: string): Promise<void> {
    await this.events.appendServerEvent(runId, { runId, threadId, type: 'RUN_FINISHED', outcome: { type: 'success' } });
  }

  /** Starts the thread's oldest queued run if the thread is free; in the owner's unit of work. */
  async startNextQueued(threadId: string, owner: JwtPayload): Promise<PendingStep | null> {
    const next = await this.runs.nextQueued(threadId);
    return next ? this.dispatchStep(next, { kind: 'start' }, owner) : null;
  }

  /**
   * Publishes steps after their unit of work committed. A step the broker refused is left to its lease: the sweeper
   * dispatches it again once the lease has expired (a user's own request instead answers 503: see publishOrFail).
   */
  async publish(steps: readonly (PendingStep | null)[]): Promise<void> {
    for (const step of steps) {
      if (!step) continue;
      await this.publisher.publish(step).catch((error: unknown) => {
        this.logger.warn(`Run ${step.context.run.runId}: publishing its ${step.kind} step failed (${describe(error)}); the sweeper will dispatch it again.`);
      });
    }
  }

  /** Runs `fn` as the run's owner, with the owner's token claims rebuilt from their user row (for the server's own work). */
  asOwner<T>(tenant: RunTenant, fn: (owner: JwtPayload) => Promise<T>): Promise<T> {
    const frame = (work: () => Promise<T>) => (tenant.schoolId ? withSchool(tenant.schoolId, tenant.ownerId, work) : runUnscoped(tenant.ownerId, work));
    return frame(async () => {
      const user = await repo(UserEntity).findOneByOrFail({ id: tenant.ownerId });
      const now = Math.floor(Date.now() / 1000);
      return fn({ sub: user.id, type: user.userType, schoolId: user.schoolId, campusId: user.campusId, iat: now, exp: now + this.config.DISPATCH_TOKEN_TTL_SECONDS });
    });
  }
}
