import { Inject, Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { dispatchKeyRing } from '../../core/config/signing-key-ring.js';
import { DataSource } from 'typeorm';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { verifyDispatchToken } from '../dispatch/dispatch-token.js';
import { AgentRunStore, type RunTenant } from '../runs/agent-run-store.service.js';
import { RunLifecycle, type PendingStep } from './run-lifecycle.service.js';
import { serverMetrics } from '../../core/observability/server-metrics.js';

/** Runs looked at per sweep; the rest wait for the next one. */
const SWEEP_BATCH = 100;

type DueRun = { id: string; school_id: string | null; owner_id: string; thread_id: string };

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * The server deciding when a run is over, on every instance at once: each sweep lists the runs due (an expired lease,
 * an expired question or direct session, a queued run whose thread is free) through one narrow SECURITY DEFINER
 * function, then takes each under its row lock with SKIP LOCKED and checks again why it was due. So with several
 * replicas each due run is handled once, by whoever locked it; nothing is held between sweeps (no session advisory
 * locks), and a replica that dies mid-sweep releases its rows with its transaction.
 *
 * An expired lease means the worker died, hung or never took the step: the step is dispatched again from its last
 * checkpoint under a new epoch (the old worker's calls and events are then refused), up to AGENT_RUN_MAX_ATTEMPTS,
 * after which the run fails with RUN_ABANDONED and the thread is free. The same handles a worker-ended run's queue
 * (promote) and a dead-lettered step (failDeadLettered).
 */
@Injectable()
export class RunSweeper implements BeforeApplicationShutdown {
  private readonly logger = new Logger(RunSweeper.name);
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | null = null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly runs: AgentRunStore,
    private readonly lifecycle: RunLifecycle,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.sweep().catch((error: unknown) => this.logger.error(`Sweep failed: ${describe(error)}`)), this.config.AGENT_RUN_SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping?.catch(() => undefined);
  }

  /** One sweep (never two at once on an instance); resolves to the number of runs it changed. */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepOnce().finally(() => (this.sweeping = null));
    return this.sweeping;
  }

  /** A step the broker dead-lettered (it failed on every delivery): its run fails, if that step is still its current one. */
  async failDeadLettered(runId: string, dispatchToken: string): Promise<void> {
    const token = verifyDispatchToken(dispatchKeyRing(this.config), dispatchToken, 0);
    if (!token.ok || token.claims.runId !== runId) {
      this.logger.warn(`A dead-lettered step of run ${runId} carries no valid dispatch token (${token.ok ? 'another run' : token.reason}); ignored.`);
      return;
    }
    const tenant = await this.runs.tenantOf(runId);
    if (!tenant) return;
    const next = await this.lifecycle.asOwner(tenant, async (owner) => {
      const run = await this.runs.lock(runId);
      if (!run || run.status !== 'running' || run.epoch !== token.claims.epoch) return null;
      this.logger.warn(`Run ${runId}: its step was dead-lettered after repeated failures; the run fails.`);
      await this.lifecycle.fail(runId, run.threadId, 'STEP_DEAD_LETTERED');
      return this.lifecycle.startNextQueued(run.threadId, owner);
    });
    await this.lifecycle.publish([next]);
  }

  /** A worker's event ended a run: the thread's next queued run starts now rather than at the next sweep. */
  async promote(runId: string, threadId: string): Promise<void> {
    const tenant = await this.runs.tenantOf(runId);
    if (!tenant) return;
    const next = await this.lifecycle.asOwner(tenant, (owner) => this.lifecycle.startNextQueued(threadId, owner));
    await this.lifecycle.publish([next]);
  }

  private async sweepOnce(): Promise<number> {
    const due = (await this.dataSource.query(`SELECT id, school_id, owner_id, thread_id FROM agent_runs_due($1)`, [SWEEP_BATCH])) as DueRun[];
    let changed = 0;
    for (const run of due) {
      try {
        const tenant: RunTenant = { schoolId: run.school_id, ownerId: run.owner_id };
        const steps = await this.lifecycle.asOwner(tenant, (owner) => this.settle(run.id, owner));
        if (steps) {
          changed += 1;
          await this.lifecycle.publish(steps);
        }
      } catch (error) {
        this.logger.error(`Run ${run.id}: the sweeper could not settle it: ${describe(error)}`);
      }
    }
    return changed;
  }

  /** Why the run was due, checked again under its row lock; null when another instance took it or it moved on. */
  private async settle(runId: string, owner: Parameters<RunLifecycle['dispatchStep']>[2]): Promise<PendingStep[] | null> {
    const run = await this.runs.lock(runId, { skipLocked: true });
    if (!run) return null;
    if (run.status === 'queued') {
      const next = await this.lifecycle.startNextQueued(run.threadId, owner);
      return next ? [next] : null;
    }
    if (run.kind === 'direct' && run.status === 'running' && run.expired) {
      await this.lifecycle.close(runId, run.threadId);
      return [];
    }
    if (run.status === 'interrupted' && run.expired) {
      await this.lifecycle.fail(runId, run.threadId, 'QUESTION_EXPIRED');
      return [await this.lifecycle.startNextQueued(run.threadId, owner)].filter((step): step is PendingStep => step !== null);
    }
    if (run.kind === 'agent' && run.status === 'running' && !run.leaseLive) {
      if (run.attempts >= this.config.AGENT_RUN_MAX_ATTEMPTS) {
        serverMetrics.leaseExpiries.inc({ action: 'abandoned' });
        this.logger.warn(`Run ${runId}: no worker finished its step in ${run.attempts} attempts; the run fails.`);
        await this.lifecycle.fail(runId, run.threadId, 'RUN_ABANDONED');
        return [await this.lifecycle.startNextQueued(run.threadId, owner)].filter((step): step is PendingStep => step !== null);
      }
      serverMetrics.leaseExpiries.inc({ action: 'redispatched' });
      this.logger.warn(`Run ${runId}: its lease expired (attempt ${run.attempts}); dispatching the step again from its checkpoint.`);
      return [await this.lifecycle.dispatchStep(runId, await this.runs.stepOf(runId), owner, { again: true })];
    }
    return null;
  }
}
