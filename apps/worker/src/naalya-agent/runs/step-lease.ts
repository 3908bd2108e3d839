import type { LeaseRefusal, UsageStop } from '@naalya/agent-tools';
import type { LoggerService } from '@nestjs/common';
import type { RunLeases } from './run-lease.client.js';

/**
 * Why a step stopped holding its lease: the server refused a renew, or no renew was granted for a whole lease, or a usage
 * report was answered "stop" (the server has ended the run and taken the lease back) or not answered at all.
 */
export type LeaseLoss = LeaseRefusal | 'expired' | UsageStop | 'usage_unanswered';

/** Why a claim did not give the step a lease: the server's refusal, or no answer at all. */
export type ClaimRefusal = LeaseRefusal | 'unanswered';

/** The reason an aborted step's signal carries when its lease is gone. */
export class RunLeaseLostError extends Error {
  override readonly name = 'RunLeaseLostError';
  constructor(readonly loss: LeaseLoss) {
    super(`the run's lease was lost (${loss})`);
  }
}

const defaultNow = () => performance.now();

/** Backoff between claims that got no answer. */
const CLAIM_FIRST_RETRY_MS = 250;
const CLAIM_MAX_RETRY_MS = 2_000;

/** How long a release may take; nobody waits for it. */
const RELEASE_TIMEOUT_MS = 2_000;

export type StepLeaseOptions = {
  leases: RunLeases;
  dispatchToken: string;
  /** For log lines only. */
  runId: string;
  logger: LoggerService;
  /** A monotonic clock in ms (default performance.now: a wall clock set back or forward must not stretch a lease). */
  now?: () => number;
};

export type ClaimResult = { granted: true; lease: StepLease } | { granted: false; reason: ClaimRefusal; detail?: string };

/**
 * The lease of one run step, from its claim to its end. While the step runs it renews every third of the lease; any
 * refusal (cancelled, superseded, ended, refused) aborts `signal`, and so does a lease the server would already consider
 * expired by the next renew (no renew granted for a whole lease: the server may have given the step to another worker).
 */
export class StepLease {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private loss: LeaseLoss | undefined;
  private readonly now: () => number;

  private constructor(
    private readonly options: StepLeaseOptions,
    private leaseMs: number,
    /** When the last granted request was sent: the server's expiry is at least this plus the lease. */
    private grantedAt: number,
  ) {
    this.now = options.now ?? defaultNow;
  }

  /**
   * Claims the step's lease. Never throws. A claim that got no answer (the broker connection is coming back, a reply
   * was lost) is asked again with backoff for up to the lease client's timeout: a step that arrives just as the broker
   * returns must not wait a whole lease for the sweeper. Still no answer is a refusal too (the server re-dispatches an
   * unclaimed step). A claim answered twice is harmless: the server grants a repeat claim to the same worker.
   */
  static async claim(options: StepLeaseOptions): Promise<ClaimResult> {
    const now = options.now ?? defaultNow;
    const deadline = now() + options.leases.timeoutMs;
    let delayMs = CLAIM_FIRST_RETRY_MS;
    for (;;) {
      const sentAt = now();
      try {
        const reply = await options.leases.request('claim', options.dispatchToken, Math.max(1, Math.floor(Math.min(options.leases.timeoutMs, deadline - sentAt))));
        if (!reply.granted) return { granted: false, reason: reply.reason };
        return { granted: true, lease: new StepLease(options, reply.leaseMs, sentAt).start() };
      } catch (error) {
        const detail = error instanceof Error ? error.message : String(error);
        if (now() + delayMs >= deadline) return { granted: false, reason: 'unanswered', detail };
        options.logger.warn(`Run ${options.runId}: the lease claim got no answer (${detail}); asking again in ${delayMs} ms.`);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, CLAIM_MAX_RETRY_MS);
      }
    }
  }

  /** Aborted when the lease is lost; the step must then stop and publish nothing more. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the lease was lost, or undefined while it is held. */
  get lost(): LeaseLoss | undefined {
    return this.loss;
  }

  /**
   * Whether the step may still act (publish, write its checkpoint): the lease is not lost, and by this process's own
   * clock the lease last granted has not run out. The second half catches a process that was frozen (SIGSTOP, a stalled
   * VM) past its lease: when it wakes, the server may already have given the step to another worker, and it must not
   * write before its next renew would have told it so. Marks the lease lost (expired) when it has run out.
   */
  held(): boolean {
    if (this.loss) return false;
    if (this.now() - this.grantedAt >= this.leaseMs) {
      this.lose('expired');
      return false;
    }
    return true;
  }

  /**
   * Gives the step up as if its lease were lost: the server said after a usage report that it may not go on (it has
   * failed the run itself and written its RUN_ERROR), or the report got no answer, so the server may not have counted
   * those tokens. Either way nothing more is published, and the lease is not released: it expires, and the server's
   * sweeper dispatches the step again from its checkpoint if the run is still running.
   */
  surrender(reason: UsageStop | 'usage_unanswered'): void {
    this.lose(reason);
  }

  /** A third of the lease: three chances to renew before it expires. */
  get renewIntervalMs(): number {
    return Math.max(1, Math.floor(this.leaseMs / 3));
  }

  /** Stops renewing (the step is over). Idempotent. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Gives the lease back, best effort and not awaited: a step that ended normally. Nothing when it was lost. */
  release(): void {
    this.stop();
    if (this.loss) return;
    this.options.leases.request('release', this.options.dispatchToken, RELEASE_TIMEOUT_MS).catch((error: unknown) => {
      this.options.logger.warn(`Run ${this.options.runId}: releasing its lease failed (it will expire): ${error instanceof Error ? error.message : String(error)}`);
    });
  }

  private start(): this {
    this.schedule();
    return this;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.renew(), this.renewIntervalMs);
    // A heartbeat must never keep the process alive on its own.
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    if (this.stopped) return;
    const sentAt = this.now();
    try {
      // Answered or given up within the interval, so renews never overlap.
      const reply = await this.options.leases.request('renew', this.options.dispatchToken, this.renewIntervalMs);
      if (this.stopped) return;
      if (!reply.granted) {
        this.lose(reply.reason);
        return;
      }
      this.grantedAt = sentAt;
      this.leaseMs = reply.leaseMs;
    } catch (error) {
      if (this.stopped) return;
      // Retried at the next tick, unless the lease would have expired by then.
      if (this.now() + this.renewIntervalMs - this.grantedAt >= this.leaseMs) {
        this.lose('expired');
        return;
      }
      this.options.logger.warn(`Run ${this.options.runId}: renewing its lease got no answer, retrying: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.schedule();
  }

  private lose(loss: LeaseLoss): void {
    if (this.loss) return;
    this.loss = loss;
    this.stop();
    const line = `Run ${this.options.runId}: its lease was lost (${loss}); stopping the step, publishing nothing more.`;
    // A cancel is the owner's wish and a spent budget the school's rule, not faults.
    if (loss === 'cancelled' || loss === 'token_budget_spent' || loss === 'step_token_budget_spent') this.options.logger.log(line);
    else this.options.logger.warn(line);
    this.controller.abort(new RunLeaseLostError(loss));
  }
}
