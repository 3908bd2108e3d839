import { ConflictException, HttpException, HttpStatus, Inject, Injectable, NotFoundException } from '@nestjs/common';
import {
  ERROR_SENTENCES,
  type AgentRunKind,
  type AgentRunStatus,
  type CommittedWrite,
  type LeaseRefusal,
  type RunAnswer,
  type RunUsage,
} from '@naalya/agent-tools';
import { DataSource } from 'typeorm';
import { currentTraceId } from '@naalya/telemetry';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { lockUntilCommit } from '../../core/database/advisory-lock.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { withCode } from '../../core/http/error-code.js';
import { serverMetrics } from '../../core/observability/server-metrics.js';
import { currentManager, repo } from '../../core/tenancy/tenant-context.js';
import { AgentRunEntity, type RunStep, type StoredInterrupt } from './agent-run.entity.js';
import type { RunState } from './agent-run-state.js';
import { recordConfirmationAnswer, voidApprovalsOf } from './tool-call-approvals.js';
import { recordConfirmationEdit } from './tool-call-edits.js';

export const RUN_NOT_FOUND_ERROR = ERROR_SENTENCES.RUN_NOT_FOUND;
export const RUN_IN_PROGRESS_ERROR = ERROR_SENTENCES.RUN_IN_PROGRESS;
export const UNKNOWN_INTERRUPT_ERROR = ERROR_SENTENCES.UNKNOWN_INTERRUPT;
export const ALREADY_ANSWERED_ERROR = ERROR_SENTENCES.ALREADY_ANSWERED;
export const STALE_INTERRUPT_ERROR = ERROR_SENTENCES.STALE_INTERRUPT;
export const QUESTION_EXPIRED_ERROR = ERROR_SENTENCES.QUESTION_EXPIRED;

export const runInProgress = () => withCode('RUN_IN_PROGRESS', new ConflictException(RUN_IN_PROGRESS_ERROR));
export const questionPending = () => withCode('QUESTION_PENDING', new ConflictException(ERROR_SENTENCES.QUESTION_PENDING));
export const runQueueFull = () => withCode('RUN_QUEUE_FULL', new HttpException(ERROR_SENTENCES.RUN_QUEUE_FULL, HttpStatus.TOO_MANY_REQUESTS));
export const threadLimit = () => withCode('THREAD_LIMIT', new HttpException(ERROR_SENTENCES.THREAD_LIMIT, HttpStatus.TOO_MANY_REQUESTS));
export const runsInFlightLimit = () =>
  withCode('RUNS_IN_FLIGHT_LIMIT', new HttpException(ERROR_SENTENCES.RUNS_IN_FLIGHT_LIMIT, HttpStatus.TOO_MANY_REQUESTS));
export const directRunLimit = () => withCode('DIRECT_RUN_LIMIT', new HttpException(ERROR_SENTENCES.DIRECT_RUN_LIMIT, HttpStatus.TOO_MANY_REQUESTS));

/** A running agent run's step of this epoch ($1 run, $2 epoch) whose lease has not expired. */
const LEASED_STEP = `id = $1 AND epoch = $2 AND status = 'running' AND kind = 'agent' AND lease_expires_at > now()`;

const UNIQUE_VIOLATION = '23505';
const ONE_ACTIVE_RUN_INDEX = 'uq_agent_runs_one_active_per_thread';
const TENANT_CACHE_LIMIT = 10_000;

/** The thread a run is recorded in: the run takes its school and owner. */
export type RunThread = { id: string; schoolId: string | null; ownerId: string };
export type RunTenant = { schoolId: string | null; ownerId: string };

/** A new run as the caller asked for it; `queued` waits for the thread's active run to end. */
export type NewRun = {
  id: string;
  thread: RunThread;
  message: string;
  kind: AgentRunKind;
  status: 'running' | 'queued';
  campusId: string | null;
  targetSchoolId: string | null;
  /** Direct runs: when the session ends (its token's expiry). */
  expiresAt?: Date;
};

/** A step as dispatched: the epoch its token must carry, and what its context is minted for. */
export type DispatchedStep = {
  runId: string;
  threadId: string;
  ownerId: string;
  epoch: number;
  step: RunStep;
  message: string;
  campusId: string | null;
  targetSchoolId: string | null;
};

/** A run row as the lifecycle reads it under its lock; `leaseLive` and `expired` are read under the lock too. */
export type LockedRun = {
  id: string;
  threadId: string;
  ownerId: string;
  kind: AgentRunKind;
  status: AgentRunStatus;
  epoch: number;
  attempts: number;
  leaseLive: boolean;
  expired: boolean;
};

export type LeaseAnswer = { granted: true; leaseMs: number } | { granted: false; reason: LeaseRefusal };

/** A usage report as counted: the run's totals and its step's tokens after it, and whose day it is added to. */
export type CountedUsage = { threadId: string; schoolId: string | null; run: RunUsage; stepTokens: number };

/** An answer as resume recorded it; `answers` holds every answer not yet sent to the worker, once none is pending. */
export type RecordedAnswer = {
  run: { id: string; campusId: string | null; targetSchoolId: string | null };
  resumed: boolean;
  pendingInterruptIds: string[];
  answers: Record<string, RunAnswer>;
};

/** A run as an event finds it under its row lock. */
export type RunForEvent = {
  threadId: string;
  schoolId: string | null;
  ownerId: string;
  status: AgentRunStatus;
  lastSeq: number;
  epoch: number;
  pendingInterrupts: StoredInterrupt[];
  error: string | null;
  /** The run's tokens so far: what a RUN_FINISHED stored now reports. */
  usage: RunUsage;
};

type AnswerableRun = {
  id: string;
  status: AgentRunStatus;
  campus_id: string | null;
  target_school_id: string | null;
  pending_interrupts: StoredInterrupt[];
  expired: boolean;
};

type EventLockedRun = {
  thread_id: string;
  school_id: string | null;
  owner_id: string;
  status: AgentRunStatus;
  last_seq: number;
  epoch: number;
  pending_interrupts: StoredInterrupt[];
  error: string | null;
  input_tokens: string;
  output_tokens: string;
};

const isActiveRunConflict = (error: unknown): boolean => {
  const driverError = (error as { driverError?: { code?: string; constraint?: string } }).driverError;
  return driverError?.code === UNIQUE_VIOLATION && driverError.constraint === ONE_ACTIVE_RUN_INDEX;
};

type LockedRow = {
  id: string;
  thread_id: string;
  owner_id: string;
  kind: AgentRunKind;
  status: AgentRunStatus;
  epoch: number;
  attempts: number;
  lease_live: boolean;
  expired: boolean;
};

/**
 * The one writer of `agent_runs`: new runs (running, queued or direct), each dispatch of a step (a new epoch, which
 * every older token fails against), the lease on it, the tokens its model calls used, answers to its questions, its
 * state after each event (the server's own included: a cancel, an abandoned step, an expired question) and the
 * revocation of its tokens. Keeping
 * every statement on the row here keeps its locks in one place: the thread lock and the one-active-run index for
 * starts, the run's row lock for everything after. Every method but tenantOf runs inside a unit of work its caller
 * opened, under RLS.
 */
@Injectable()
export class AgentRunStore {
  // A run's school and owner never change: cached so each event costs one unit of work.
  private readonly tenants = new Map<string, RunTenant>();

  constructor(
    private readonly dataSource: DataSource,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  /** The thread's run that holds it (running, or waiting for an answer), if any. */
  async activeRun(threadId: string): Promise<{ id: string; status: AgentRunStatus } | null> {
    const [run] = (await currentManager().query(
      `SELECT id, status FROM agent_runs WHERE thread_id = $1 AND status IN ('running', 'interrupted') LIMIT 1`,
      [threadId],
    )) as { id: string; status: AgentRunStatus }[];
    return run ?? null;
  }

  async queuedCount(threadId: string): Promise<number> {
    const [row] = (await currentManager().query(`SELECT count(*)::int AS n FROM agent_runs WHERE thread_id = $1 AND status = 'queued'`, [threadId])) as {
      n: number;
    }[];
    return row?.n ?? 0;
  }

  /**
   * Serialises, until the unit of work ends, the checks of one user's per-user limits against the writes they guard, on
   * every server replica: two concurrent requests cannot both see the last free slot. A transaction advisory lock, so it
   * is never left held, and keyed by the user alone, so other users never wait.
   */
  lockUserLimits(ownerId: string): Promise<void> {
    return lockUntilCommit(`agent-user-limits:${ownerId}`);
  }

  /** The user's conversation threads (AGENT_THREADS_PER_USER); the thread a direct run opens is not one. */
  async conversationThreads(ownerId: string): Promise<number> {
    const [row] = (await currentManager().query(
      `SELECT count(*)::int AS n FROM agent_threads t
        WHERE t.owner_id = $1 AND NOT EXISTS (SELECT 1 FROM agent_runs r WHERE r.thread_id = t.id AND r.kind = 'direct')`,
      [ownerId],
    )) as { n: number }[];
    return row?.n ?? 0;
  }

  /** The user's agent runs running or queued now (AGENT_RUNS_IN_FLIGHT_PER_USER); one waiting for an answer holds no worker. */
  async runsInFlight(ownerId: string): Promise<number> {
    const [row] = (await currentManager().query(
      `SELECT count(*)::int AS n FROM agent_runs WHERE owner_id = $1 AND kind = 'agent' AND status IN ('running', 'queued')`,
      [ownerId],
    )) as { n: number }[];
    return row?.n ?? 0;
  }

  /** The direct runs a user has open now (bounded by AGENT_DIRECT_RUNS_PER_USER). */
  async openDirectRuns(ownerId: string): Promise<number> {
    const [row] = (await currentManager().query(
      `SELECT count(*)::int AS n FROM agent_runs WHERE owner_id = $1 AND status = 'running' AND kind = 'direct' AND expires_at > now()`,
      [ownerId],
    )) as { n: number }[];
    return row?.n ?? 0;
  }

  /**
   * Records a run. A running one goes into a thread the caller has locked and checked for an active run; the partial
   * unique index is the floor under that check (a race answers 409). A running agent run is dispatched next
   * (beginStep); a direct run needs no worker and runs until it is closed or expires.
   */
  async insert(run: NewRun): Promise<void> {
    try {
      await repo(AgentRunEntity).insert({
        id: run.id,
        threadId: run.thread.id,
        schoolId: run.thread.schoolId,
        ownerId: run.thread.ownerId,
        kind: run.kind,
        status: run.status,
        message: run.message,
        campusId: run.campusId,
        targetSchoolId: run.targetSchoolId,
        pendingInterrupts: [],
        lastSeq: 0,
        epoch: 0,
        attempts: 0,
        expiresAt: run.expiresAt ?? null,
        // The request's trace (POST run, or the direct-run request): what the worker's spans continue.
        traceId: currentTraceId() ?? null,
      });
    } catch (error) {
      if (isActiveRunConflict(error)) throw runInProgress();
      throw error;
    }
    serverMetrics.runStatuses.inc({ status: run.status });
  }

  /**
   * Dispatches a step of a run this unit of work holds: running, a new epoch, no lease holder yet and one lease's
   * time for a worker to claim it. `again` counts another attempt at the same step; otherwise the step is new.
   */
  async beginStep(runId: string, step: RunStep, options: { again?: boolean } = {}): Promise<DispatchedStep> {
    const [rows] = (await currentManager().query(
      `UPDATE agent_runs SET status = 'running', epoch = epoch + 1, attempts = ${options.again ? 'attempts + 1' : '1'}, step = $2, step_tokens = 0,
              lease_worker = NULL, lease_expires_at = now() + make_interval(secs => $3), expires_at = NULL, updated_at = now()
        WHERE id = $1
        RETURNING thread_id, owner_id, epoch, message, campus_id, target_school_id`,
      [runId, JSON.stringify(step), this.config.AGENT_RUN_LEASE_SECONDS],
    )) as [{ thread_id: string; owner_id: string; epoch: number; message: string; campus_id: string | null; target_school_id: string | null }[], number];
    const row = rows[0];
    if (!row) throw new Error(`Run ${runId} vanished while it was being dispatched.`);
    return {
      runId,
      threadId: row.thread_id,
      ownerId: row.owner_id,
      epoch: row.epoch,
      step,
      message: row.message,
      campusId: row.campus_id,
      targetSchoolId: row.target_school_id,
    };
  }

  /** The oldest queued run of a thread with no active run, locked; one another instance is starting is skipped. */
  async nextQueued(threadId: string): Promise<string | null> {
    if (await this.activeRun(threadId)) return null;
    const [run] = (await currentManager().query(
      `SELECT id FROM agent_runs WHERE thread_id = $1 AND status = 'queued' ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED`,
      [threadId],
    )) as { id: string }[];
    return run?.id ?? null;
  }

  /**
   * The run's row locked for the lifecycle (cancel, the sweeper, a dead-lettered step); null if gone or (skipLocked)
   * held elsewhere. FOR UPDATE waits for the run's writes still inside their transactions (each holds KEY SHARE; reads hold none).
   */
  async lock(runId: string, options: { skipLocked?: boolean } = {}): Promise<LockedRun | null> {
    const [run] = (await currentManager().query(
      `SELECT id, thread_id, owner_id, kind, status, epoch, attempts,
              COALESCE(lease_expires_at > now(), false) AS lease_live, COALESCE(expires_at < now(), false) AS expired
         FROM agent_runs WHERE id = $1 FOR UPDATE${options.skipLocked ? ' SKIP LOCKED' : ''}`,
      [runId],
    )) as LockedRow[];
    if (!run) return null;
    return {
      id: run.id,
      threadId: run.thread_id,
      ownerId: run.owner_id,
      kind: run.kind,
      status: run.status,
      epoch: run.epoch,
      attempts: run.attempts,
      leaseLive: run.lease_live,
      expired: run.expired,
    };
  }

  /** The step a run is on, to dispatch it again once its lease expired. */
  async stepOf(runId: string): Promise<RunStep> {
    const [run] = (await currentManager().query(`SELECT step FROM agent_runs WHERE id = $1`, [runId])) as { step: RunStep | null }[];
    return run?.step ?? { kind: 'start' };
  }

  /**
   * Revokes every token of the run (its epoch moves on), its lease and the approvals given in it: the first writes of a
   * cancel or a server-decided failure, under the row lock.
   */
  async revoke(runId: string): Promise<void> {
    await currentManager().query(`UPDATE agent_runs SET epoch = epoch + 1, lease_worker = NULL, lease_expires_at = NULL, updated_at = now() WHERE id = $1`, [
      runId,
    ]);
    await voidApprovalsOf(runId);
  }

  /** The writes the run committed (the ledger names each write's run), read across schools: a platform admin writes in a target school. */
  async committedWrites(runId: string): Promise<CommittedWrite[]> {
    const rows = (await currentManager().query(`SELECT call_id, event, audit_id FROM agent_run_committed_writes($1)`, [runId])) as {
      call_id: string;
      event: string;
      audit_id: string | null;
    }[];
    return rows.map((row) => ({ callId: row.call_id, event: row.event, auditId: row.audit_id }));
  }

  /**
   * Claims or renews the lease on a run's current step for one worker. A claim succeeds for the first worker of an
   * epoch only: a step redelivered to a second worker while the first may still be alive is refused, and the sweeper
   * dispatches it again under a new epoch once the lease has expired. A renew succeeds only for the holder, before
   * expiry: a lease once gone stays gone.
   */
  async lease(runId: string, epoch: number, workerId: string, action: 'claim' | 'renew'): Promise<LeaseAnswer> {
    const holder = action === 'claim' ? '(lease_worker IS NULL OR lease_worker = $3)' : 'lease_worker = $3';
    const [, updated] = (await currentManager().query(
      `UPDATE agent_runs SET lease_worker = $3, lease_expires_at = now() + make_interval(secs => $4)
        WHERE ${LEASED_STEP} AND ${holder}`,
      [runId, epoch, workerId, this.config.AGENT_RUN_LEASE_SECONDS],
    )) as [unknown, number];
    if (updated === 1) return { granted: true, leaseMs: this.config.AGENT_RUN_LEASE_SECONDS * 1000 };
    return { granted: false, reason: await this.refusalOf(runId, epoch) };
  }

  /**
   * Adds a model call's tokens to the run and to its step, for the live lease holder of the step alone (the same
   * condition as a renewal); null, counting nothing, for anyone else. The row lock of the update makes concurrent
   * reports of one run add up exactly.
   */
  async addUsage(runId: string, epoch: number, workerId: string, usage: RunUsage): Promise<CountedUsage | null> {
    const [rows] = (await currentManager().query(
      `UPDATE agent_runs SET input_tokens = input_tokens + $4, output_tokens = output_tokens + $5, step_tokens = step_tokens + $4 + $5
        WHERE ${LEASED_STEP} AND lease_worker = $3
        RETURNING thread_id, school_id, input_tokens, output_tokens, step_tokens`,
      [runId, epoch, workerId, usage.inputTokens, usage.outputTokens],
    )) as [{ thread_id: string; school_id: string | null; input_tokens: string; output_tokens: string; step_tokens: string }[], number];
    const row = rows[0];
    if (!row) return null;
    return {
      threadId: row.thread_id,
      schoolId: row.school_id,
      run: { inputTokens: Number(row.input_tokens), outputTokens: Number(row.output_tokens) },
      stepTokens: Number(row.step_tokens),
    };
  }

  /** Why a worker's call about a step of this epoch is refused, once it was: the run's state says. */
  async refusalOf(runId: string, epoch: number): Promise<LeaseRefusal> {
    const [run] = (await currentManager().query(`SELECT status, epoch FROM agent_runs WHERE id = $1`, [runId])) as { status: AgentRunStatus; epoch: number }[];
    if (!run) return 'refused';
    if (run.status === 'cancelled') return 'cancelled';
    if (run.status === 'running' || run.epoch !== epoch) return 'superseded';
    return 'ended';
  }

  /** The thread and schools of a run: whose data choice and whose day of tokens apply to it. */
  async schoolsOf(runId: string): Promise<{ threadId: string; schoolId: string | null; targetSchoolId: string | null } | null> {
    const [run] = (await currentManager().query(`SELECT thread_id, school_id, target_school_id FROM agent_runs WHERE id = $1`, [runId])) as {
      thread_id: string;
      school_id: string | null;
      target_school_id: string | null;
    }[];
    return run ? { threadId: run.thread_id, schoolId: run.school_id, targetSchoolId: run.target_school_id } : null;
  }

  /**
   * Records a user's answer to one pending question of the thread's runs (a confirmation's with it, as the approval
   * of the call it asked about). The run's row lock makes answers to one run take turns: of two answers to one
   * question, one wins. Once none is pending the run is running again, and its undelivered answers are returned.
   */
  async recordAnswer(
    thread: RunThread,
    reply: { interruptId: string; answer: string; edits?: Record<string, unknown> },
    userId: string,
  ): Promise<RecordedAnswer> {
    const [run] = (await currentManager().query(
      `SELECT id, status, campus_id, target_school_id, pending_interrupts,
              COALESCE(expires_at < now(), false) OR error_code = 'QUESTION_EXPIRED' AS expired FROM agent_runs
        WHERE thread_id = $1 AND pending_interrupts @> $2::jsonb
        ORDER BY created_at DESC LIMIT 1 FOR UPDATE`,
      [thread.id, JSON.stringify([{ interruptId: reply.interruptId }])],
    )) as AnswerableRun[];
    const interrupt = run?.pending_interrupts.find((candidate) => candidate.interruptId === reply.interruptId);
    if (!run || !interrupt) throw withCode('UNKNOWN_INTERRUPT', new ConflictException(UNKNOWN_INTERRUPT_ERROR));
    if (interrupt.answered) throw withCode('ALREADY_ANSWERED', new ConflictException(ALREADY_ANSWERED_ERROR));
    // An expired question says so, before the sweeper has ended its run and after (the run then failed QUESTION_EXPIRED).
    if (run.expired) throw withCode('QUESTION_EXPIRED', new ConflictException(QUESTION_EXPIRED_ERROR));
    if (run.status !== 'interrupted') throw withCode('STALE_INTERRUPT', new ConflictException(STALE_INTERRUPT_ERROR));

    // An edit is checked and recorded first: refused, nothing below runs and the question still waits.
    const editedArgs =
      reply.edits === undefined
        ? undefined
        : await recordConfirmationEdit({ schoolId: thread.schoolId, threadId: thread.id, runId: run.id, userId, interrupt, edits: reply.edits });
    Object.assign(interrupt, { answered: true, answer: reply.answer, answeredAt: new Date().toISOString(), ...(editedArgs ? { editedArgs } : {}) });
    // The approval is bound to what the worker asked about (stored with the question), never to anything the
    // client sends, and commits with the answered question or not at all. An edit approves nothing: the edited call
    // is asked about again.
    if (interrupt.confirmation && interrupt.argsHash && !editedArgs) {
      await recordConfirmationAnswer({
        schoolId: thread.schoolId,
        threadId: thread.id,
        runId: run.id,
        interruptId: interrupt.interruptId,
        event: interrupt.confirmation.event,
        callId: interrupt.confirmation.callId,
        argsHash: interrupt.argsHash,
        userId,
        answer: reply.answer,
        ttlSeconds: this.config.TOOL_APPROVAL_TTL_SECONDS,
      });
    }
    const pendingInterruptIds = run.pending_interrupts.filter((candidate) => !candidate.answered).map((candidate) => candidate.interruptId);
    const resumed = pendingInterruptIds.length === 0;
    let answers: Record<string, RunAnswer> = {};
    if (resumed) {
      const undelivered = run.pending_interrupts.filter((candidate) => !candidate.delivered);
      answers = Object.fromEntries(
        undelivered.map((candidate) => [candidate.interruptId, candidate.editedArgs ? { editedArgs: candidate.editedArgs } : (candidate.answer ?? '')]),
      );
      for (const candidate of undelivered) candidate.delivered = true;
    }
    // Still interrupted until every question is answered; the resumed step is then dispatched (beginStep) in this unit of work.
    await currentManager().query(`UPDATE agent_runs SET pending_interrupts = $2, updated_at = now() WHERE id = $1`, [run.id, JSON.stringify(run.pending_interrupts)]);
    return {
      run: { id: run.id, campusId: run.campus_id, targetSchoolId: run.target_school_id },
      resumed,
      pendingInterruptIds,
      answers,
    };
  }

  /**
   * The run's row locked until its event's unit of work commits: so its seq (last_seq + 1) is gapless and monotonic.
   * NO KEY UPDATE, so a tool call of the run in its transaction (KEY SHARE) does not hold the stream up; a cancel does.
   */
  async lockForEvent(runId: string): Promise<RunForEvent | null> {
    const [run] = (await currentManager().query(
      `SELECT thread_id, school_id, owner_id, status, last_seq, epoch, pending_interrupts, error, input_tokens, output_tokens
         FROM agent_runs WHERE id = $1 FOR NO KEY UPDATE`,
      [runId],
    )) as EventLockedRun[];
    if (!run) return null;
    return {
      threadId: run.thread_id,
      schoolId: run.school_id,
      ownerId: run.owner_id,
      status: run.status,
      lastSeq: run.last_seq,
      epoch: run.epoch,
      pendingInterrupts: run.pending_interrupts,
      error: run.error,
      usage: { inputTokens: Number(run.input_tokens), outputTokens: Number(run.output_tokens) },
    };
  }

  /**
   * When questions asked now stop waiting (AGENT_QUESTION_TTL_SECONDS), by the database's clock and to the millisecond,
   * so the instant stamped into the stored interrupts and the run's expires_at (which the sweeper compares) are one.
   */
  async questionsExpireAt(): Promise<Date> {
    const [row] = (await currentManager().query(`SELECT date_trunc('milliseconds', now() + make_interval(secs => $1)) AS at`, [
      this.config.AGENT_QUESTION_TTL_SECONDS,
    ])) as { at: Date }[];
    return row.at;
  }

  /**
   * The run's state after the events stored up to `lastSeq` (runStateAfter over each), in the unit of work that stored
   * them: one update however many events. `questionsExpireAt` is given when the run has just paused.
   */
  async applyState(runId: string, lastSeq: number, next: RunState, questionsExpireAt: Date | null): Promise<void> {
    // Only a running step holds a lease. A step that stops (paused or ended) has its answers' text whole: kept for
    // thread search (migration 1764662400019), once per step rather than per streamed event.
    const stopped = next.status === 'running' ? '' : ', lease_worker = NULL, lease_expires_at = NULL, reply = agent_run_reply(id)';
    await currentManager().query(
      `UPDATE agent_runs SET last_seq = $2, status = $3, pending_interrupts = $4, error = $5, error_code = $6,
              expires_at = COALESCE($7, expires_at)${stopped}, updated_at = now() WHERE id = $1`,
      [runId, lastSeq, next.status, JSON.stringify(next.pendingInterrupts), next.error, next.errorCode, questionsExpireAt],
    );
  }

  /** The caller's run in the caller's thread, or 404. */
  async ownedRun(threadId: string, runId: string, caller: JwtPayload): Promise<AgentRunEntity> {
    const run = await repo(AgentRunEntity).findOneBy({ id: runId, threadId, ownerId: caller.sub });
    if (!run) throw withCode('RUN_NOT_FOUND', new NotFoundException(RUN_NOT_FOUND_ERROR));
    return run;
  }

  /** The caller's direct run, or 404. */
  async ownedDirectRun(runId: string, caller: JwtPayload): Promise<AgentRunEntity> {
    const run = await repo(AgentRunEntity).findOneBy({ id: runId, ownerId: caller.sub, kind: 'direct' });
    if (!run) throw withCode('RUN_NOT_FOUND', new NotFoundException(RUN_NOT_FOUND_ERROR));
    return run;
  }

  runsOf(threadId: string): Promise<AgentRunEntity[]> {
    return repo(AgentRunEntity).find({ where: { threadId }, order: { createdAt: 'ASC' } });
  }

  /** Null for a run this frame cannot read. */
  async statusOf(runId: string): Promise<AgentRunStatus | null> {
    const [run] = (await currentManager().query(`SELECT status FROM agent_runs WHERE id = $1`, [runId])) as { status: AgentRunStatus }[];
    return run?.status ?? null;
  }

  /**
   * Whose frame to open for a run known only by its id (the ingest's case), outside any unit of work: through the
   * narrow SECURITY DEFINER lookup.
   */
  async tenantOf(runId: string): Promise<RunTenant | null> {
    const cached = this.tenants.get(runId);
    if (cached) return cached;
    const [row] = (await this.dataSource.query(`SELECT school_id, owner_id FROM agent_run_tenant($1)`, [runId])) as {
      school_id: string | null;
      owner_id: string;
    }[];
    if (!row) return null;
    const tenant = { schoolId: row.school_id, ownerId: row.owner_id };
    if (this.tenants.size >= TENANT_CACHE_LIMIT) this.tenants.delete(this.tenants.keys().next().value as string);
    this.tenants.set(runId, tenant);
    return tenant;
  }
}
