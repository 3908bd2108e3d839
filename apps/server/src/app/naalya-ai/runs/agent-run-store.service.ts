import { randomUUID } from 'node:crypto';
import { ConflictException, Injectable, NotFoundException } from '@nestjs/common';
import { ERROR_SENTENCES, type AgentRunEvent, type AgentRunStatus, type AgentRuntimeContext } from '@naalya/agent-tools';
import { DataSource, In } from 'typeorm';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { withCode } from '../../core/http/error-code.js';
import { currentManager, repo } from '../../core/tenancy/tenant-context.js';
import { ACTIVE_RUN_STATUSES, AgentRunEntity, type StoredInterrupt } from './agent-run.entity.js';
import { runStateAfter } from './agent-run-state.js';
import { recordConfirmationAnswer } from './tool-call-approvals.js';

export const RUN_NOT_FOUND_ERROR = ERROR_SENTENCES.RUN_NOT_FOUND;
export const RUN_IN_PROGRESS_ERROR = ERROR_SENTENCES.RUN_IN_PROGRESS;
export const UNKNOWN_INTERRUPT_ERROR = ERROR_SENTENCES.UNKNOWN_INTERRUPT;
export const ALREADY_ANSWERED_ERROR = ERROR_SENTENCES.ALREADY_ANSWERED;
export const STALE_INTERRUPT_ERROR = ERROR_SENTENCES.STALE_INTERRUPT;

const runInProgress = () => withCode('RUN_IN_PROGRESS', new ConflictException(RUN_IN_PROGRESS_ERROR));

const UNIQUE_VIOLATION = '23505';
const ONE_ACTIVE_RUN_INDEX = 'uq_agent_runs_one_active_per_thread';
const TENANT_CACHE_LIMIT = 10_000;

/** The thread a run is recorded in: the run takes its school and owner. */
export type RunThread = { id: string; schoolId: string | null; ownerId: string };
export type RunTenant = { schoolId: string | null; ownerId: string };

/** An answer as resume recorded it; `answers` holds every answer not yet sent to the worker, once none is pending. */
export type RecordedAnswer = {
  run: { id: string; campusId: string | null; targetSchoolId: string | null };
  resumed: boolean;
  pendingInterruptIds: string[];
  answers: Record<string, string>;
};

/** A run as an event finds it under its row lock. */
export type RunForEvent = {
  threadId: string;
  status: AgentRunStatus;
  lastSeq: number;
  pendingInterrupts: StoredInterrupt[];
  error: string | null;
};

type AnswerableRun = {
  id: string;
  status: AgentRunStatus;
  campus_id: string | null;
  target_school_id: string | null;
  pending_interrupts: StoredInterrupt[];
};

type EventLockedRun = {
  thread_id: string;
  status: AgentRunStatus;
  last_seq: number;
  pending_interrupts: StoredInterrupt[];
  error: string | null;
};

const isActiveRunConflict = (error: unknown): boolean => {
  const driverError = (error as { driverError?: { code?: string; constraint?: string } }).driverError;
  return driverError?.code === UNIQUE_VIOLATION && driverError.constraint === ONE_ACTIVE_RUN_INDEX;
};

/**
 * The one writer of `agent_runs`: whether a thread may start a run, the running row, answers to its questions, its
 * state after each event, and its failure when its step could not be published. Keeping every statement on the row
 * here keeps its locks in one place: the thread lock and the one-active-run index for starts, the run's row lock for
 * answers and events. Every method but tenantOf runs inside a unit of work its caller opened, under RLS.
 */
@Injectable()
export class AgentRunStore {
  // A run's school and owner never change: cached so each event costs one unit of work.
  private readonly tenants = new Map<string, RunTenant>();

  constructor(private readonly dataSource: DataSource) {}

  /**
   * Records a running run in a thread the caller has locked, or 409 while another run of it is active; the partial
   * unique index is the floor under that check. `mint` makes the run's context once the thread is known to be free,
   * with the new run's id: a context refused there records nothing.
   */
  async start(
    thread: RunThread,
    message: string,
    mint: (runId: string) => Promise<AgentRuntimeContext>,
  ): Promise<{ runId: string; context: AgentRuntimeContext }> {
    if (await repo(AgentRunEntity).existsBy({ threadId: thread.id, status: In([...ACTIVE_RUN_STATUSES]) })) {
      throw runInProgress();
    }
    const runId = randomUUID();
    const context = await mint(runId);
    try {
      await this.insertRunning(runId, thread, message, context);
    } catch (error) {
      if (isActiveRunConflict(error)) throw runInProgress();
      throw error;
    }
    return { runId, context };
  }

  /** Records the running run of a thread opened for direct tool calls, under the run id its context was minted with. */
  openDirect(runId: string, thread: RunThread, message: string, context: AgentRuntimeContext): Promise<void> {
    return this.insertRunning(runId, thread, message, context);
  }

  /**
   * Records a user's answer to one pending question of the thread's runs (a confirmation's with it, as the approval
   * of the call it asked about). The run's row lock makes answers to one run take turns: of two answers to one
   * question, one wins. Once none is pending the run is running again, and its undelivered answers are returned.
   */
  async recordAnswer(thread: RunThread, reply: { interruptId: string; answer: string }, userId: string): Promise<RecordedAnswer> {
    const [run] = (await currentManager().query(
      `SELECT id, status, campus_id, target_school_id, pending_interrupts FROM agent_runs
        WHERE thread_id = $1 AND pending_interrupts @> $2::jsonb
        ORDER BY created_at DESC LIMIT 1 FOR UPDATE`,
      [thread.id, JSON.stringify([{ interruptId: reply.interruptId }])],
    )) as AnswerableRun[];
    const interrupt = run?.pending_interrupts.find((candidate) => candidate.interruptId === reply.interruptId);
    if (!run || !interrupt) throw withCode('UNKNOWN_INTERRUPT', new ConflictException(UNKNOWN_INTERRUPT_ERROR));
    if (interrupt.answered) throw withCode('ALREADY_ANSWERED', new ConflictException(ALREADY_ANSWERED_ERROR));
    if (run.status !== 'interrupted') throw withCode('STALE_INTERRUPT', new ConflictException(STALE_INTERRUPT_ERROR));

    Object.assign(interrupt, { answered: true, answer: reply.answer, answeredAt: new Date().toISOString() });
    // The approval is bound to what the worker asked about (stored with the question), never to anything the
    // client sends, and commits with the answered question or not at all.
    if (interrupt.confirmation && interrupt.argsHash) {
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
      });
    }
    const pendingInterruptIds = run.pending_interrupts.filter((candidate) => !candidate.answered).map((candidate) => candidate.interruptId);
    const resumed = pendingInterruptIds.length === 0;
    let answers: Record<string, string> = {};
    if (resumed) {
      const undelivered = run.pending_interrupts.filter((candidate) => !candidate.delivered);
      answers = Object.fromEntries(undelivered.map((candidate) => [candidate.interruptId, candidate.answer ?? '']));
      for (const candidate of undelivered) candidate.delivered = true;
    }
    await currentManager().query(`UPDATE agent_runs SET pending_interrupts = $2, status = $3, updated_at = now() WHERE id = $1`, [
      run.id,
      JSON.stringify(run.pending_interrupts),
      resumed ? 'running' : 'interrupted',
    ]);
    return {
      run: { id: run.id, campusId: run.campus_id, targetSchoolId: run.target_school_id },
      resumed,
      pendingInterruptIds,
      answers,
    };
  }

  /** Fails a run that is still running, with the sentence its thread shows: an event that already ended it wins. */
  async failIfRunning(runId: string, error: string): Promise<void> {
    await currentManager().query(`UPDATE agent_runs SET status = 'failed', error = $2, updated_at = now() WHERE id = $1 AND status = 'running'`, [
      runId,
      error,
    ]);
  }

  /** The run's row locked until its event's unit of work commits: so its seq (last_seq + 1) is gapless and monotonic. */
  async lockForEvent(runId: string): Promise<RunForEvent | null> {
    const [run] = (await currentManager().query(
      `SELECT thread_id, status, last_seq, pending_interrupts, error FROM agent_runs WHERE id = $1 FOR UPDATE`,
      [runId],
    )) as EventLockedRun[];
    if (!run) return null;
    return { threadId: run.thread_id, status: run.status, lastSeq: run.last_seq, pendingInterrupts: run.pending_interrupts, error: run.error };
  }

  /** What the event stored as `seq` does to its run (runStateAfter), in the unit of work that stored it. */
  async applyEvent(runId: string, run: RunForEvent, seq: number, event: AgentRunEvent): Promise<void> {
    const next = runStateAfter({ status: run.status, pendingInterrupts: run.pendingInterrupts, error: run.error }, event);
    await currentManager().query(
      `UPDATE agent_runs SET last_seq = $2, status = $3, pending_interrupts = $4, error = $5, updated_at = now() WHERE id = $1`,
      [runId, seq, next.status, JSON.stringify(next.pendingInterrupts), next.error],
    );
  }

  /** The caller's run in the caller's thread, or 404. */
  async ownedRun(threadId: string, runId: string, caller: JwtPayload): Promise<AgentRunEntity> {
    const run = await repo(AgentRunEntity).findOneBy({ id: runId, threadId, ownerId: caller.sub });
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

  private async insertRunning(runId: string, thread: RunThread, message: string, context: AgentRuntimeContext): Promise<void> {
    await repo(AgentRunEntity).insert({
      id: runId,
      threadId: thread.id,
      schoolId: thread.schoolId,
      ownerId: thread.ownerId,
      status: 'running',
      message,
      campusId: context.runMode.mode === 'campus' ? context.runMode.campus.id : null,
      targetSchoolId: context.runMode.mode === 'school' ? (context.runMode.targetSchoolId ?? null) : null,
      pendingInterrupts: [],
      lastSeq: 0,
    });
  }
}
