import { randomUUID } from 'node:crypto';
import { ConflictException, Injectable, Logger, NotFoundException } from '@nestjs/common';
import type { AgentRunRequest, AgentRuntimeContext } from '@naalya/agent-tools';
import { In } from 'typeorm';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { IdentityService } from '../../core/auth/identity.service.js';
import { currentManager, repo } from '../../core/tenancy/tenant-context.js';
import { AgentContextService } from '../dispatch/agent-context.service.js';
import { asCaller } from './agent-caller.guard.js';
import { AGENT_UNAVAILABLE_ERROR, AgentRunPublisher } from '../dispatch/agent-run-publisher.service.js';
import { ACTIVE_RUN_STATUSES, AgentRunEntity, type AgentRunStatus, type StoredInterrupt } from '../runs/agent-run.entity.js';
import { AgentThreadEntity } from './agent-thread.entity.js';
import { recordConfirmationAnswer } from '../runs/tool-call-approvals.js';

export const THREAD_NOT_FOUND_ERROR = 'Thread not found.';
export const RUN_NOT_FOUND_ERROR = 'Run not found.';
export const RUN_IN_PROGRESS_ERROR =
  'This thread already has a run in progress or waiting for an answer. Wait for it to finish, or answer its question.';
export const UNKNOWN_INTERRUPT_ERROR = 'No question with this id was asked in this thread.';
export const ALREADY_ANSWERED_ERROR = 'This question has already been answered.';
export const STALE_INTERRUPT_ERROR = 'This question is no longer waiting for an answer: its run has moved on.';

const UNIQUE_VIOLATION = '23505';
export const DIRECT_RUN_TITLE = 'Direct tool calls';
const ONE_ACTIVE_RUN_INDEX = 'uq_agent_runs_one_active_per_thread';
const TITLE_LENGTH = 80;

export type CreateThreadDto = { title?: string };
export type StartRunDto = { message: string; campusId?: string; targetSchoolId?: string };
export type ResumeDto = { interruptId: string; answer: string };

export type ThreadSummary = { id: string; title: string | null; createdAt: Date; updatedAt: Date };
/** What a client sees of a question: `confirm` marks a confirmation of one tool call, which only a yes approves. */
export type InterruptView = Pick<StoredInterrupt, 'interruptId' | 'question' | 'askedBy' | 'answered'> & { confirm?: true };
export type RunSummary = {
  id: string;
  status: AgentRunStatus;
  message: string;
  campusId: string | null;
  targetSchoolId: string | null;
  interrupts: InterruptView[];
  error: string | null;
  lastSeq: number;
  createdAt: Date;
  updatedAt: Date;
};
export type ThreadDetail = ThreadSummary & { runs: RunSummary[] };
export type ResumeResult = { runId: string; resumed: boolean; pendingInterruptIds: string[] };

type LockedRun = {
  id: string;
  status: AgentRunStatus;
  campus_id: string | null;
  target_school_id: string | null;
  pending_interrupts: StoredInterrupt[];
};

const threadSummary = (thread: AgentThreadEntity): ThreadSummary => ({
  id: thread.id,
  title: thread.title,
  createdAt: thread.createdAt,
  updatedAt: thread.updatedAt,
});

const runSummary = (run: AgentRunEntity): RunSummary => ({
  id: run.id,
  status: run.status,
  message: run.message,
  campusId: run.campusId,
  targetSchoolId: run.targetSchoolId,
  interrupts: run.pendingInterrupts.map(({ interruptId, question, askedBy, answered, confirmation }) => ({
    interruptId,
    question,
    askedBy,
    answered,
    ...(confirmation ? { confirm: true as const } : {}),
  })),
  error: run.error,
  lastSeq: run.lastSeq,
  createdAt: run.createdAt,
  updatedAt: run.updatedAt,
});

const isActiveRunConflict = (error: unknown): boolean => {
  const driverError = (error as { driverError?: { code?: string; constraint?: string } }).driverError;
  return driverError?.code === UNIQUE_VIOLATION && driverError.constraint === ONE_ACTIVE_RUN_INDEX;
};

/**
 * Threads and their runs. Every call is one short unit of work as the caller, checks that the caller owns the
 * thread (another user's thread, in any school, reads as not found), and is backed by RLS, which binds the rows
 * to their school and owner. Starting and resuming publish the run step once that unit of work has committed (see
 * dispatch): a step the broker did not take fails its run and answers 503.
 */
@Injectable()
export class AgentThreadsService {
  private readonly logger = new Logger(AgentThreadsService.name);

  constructor(
    private readonly identityService: IdentityService,
    private readonly contextService: AgentContextService,
    private readonly publisher: AgentRunPublisher,
  ) {}

  createThread(dto: CreateThreadDto, caller: JwtPayload): Promise<ThreadSummary> {
    return asCaller(caller, async () => {
      const user = await this.identityService.assertCurrent(caller);
      const thread = repo(AgentThreadEntity).create({
        id: randomUUID(),
        schoolId: user.schoolId,
        ownerId: user.id,
        title: dto.title ?? null,
      });
      await repo(AgentThreadEntity).insert(thread);
      return threadSummary(await this.ownedThread(thread.id, caller));
    });
  }

  listThreads(caller: JwtPayload): Promise<ThreadSummary[]> {
    return asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      const threads = await repo(AgentThreadEntity).find({ where: { ownerId: caller.sub }, order: { updatedAt: 'DESC' }, take: 100 });
      return threads.map(threadSummary);
    });
  }

  getThread(threadId: string, caller: JwtPayload): Promise<ThreadDetail> {
    return asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      const thread = await this.ownedThread(threadId, caller);
      const runs = await repo(AgentRunEntity).find({ where: { threadId: thread.id }, order: { createdAt: 'ASC' } });
      return { ...threadSummary(thread), runs: runs.map(runSummary) };
    });
  }

  async startRun(threadId: string, dto: StartRunDto, caller: JwtPayload): Promise<{ runId: string }> {
    const { runId, context } = await asCaller(caller, async () => {
      // Locking the thread serialises starts on it; the partial unique index is the floor under this check.
      const thread = await this.ownedThread(threadId, caller, { lock: true });
      if (await repo(AgentRunEntity).existsBy({ threadId: thread.id, status: In([...ACTIVE_RUN_STATUSES]) })) {
        throw new ConflictException(RUN_IN_PROGRESS_ERROR);
      }
      const runId = randomUUID();
      // Identity, campus and target school are checked and minted here, from the token and the database.
      const context = await this.contextService.mint({ campusId: dto.campusId, targetSchoolId: dto.targetSchoolId, runId, threadId }, caller);
      try {
        await repo(AgentRunEntity).insert({
          id: runId,
          threadId: thread.id,
          schoolId: thread.schoolId,
          ownerId: thread.ownerId,
          status: 'running',
          message: dto.message,
          campusId: context.runMode.mode === 'campus' ? context.runMode.campus.id : null,
          targetSchoolId: context.runMode.mode === 'school' ? (context.runMode.targetSchoolId ?? null) : null,
          pendingInterrupts: [],
          lastSeq: 0,
        });
      } catch (error) {
        if (isActiveRunConflict(error)) throw new ConflictException(RUN_IN_PROGRESS_ERROR);
        throw error;
      }
      await repo(AgentThreadEntity).update(
        { id: thread.id },
        { updatedAt: new Date(), ...(thread.title ? {} : { title: dto.message.slice(0, TITLE_LENGTH) }) },
      );
      return { runId, context };
    });
    await this.dispatch(caller, runId, { kind: 'start', context, message: dto.message });
    return { runId };
  }

  async resume(threadId: string, dto: ResumeDto, caller: JwtPayload): Promise<ResumeResult> {
    const { result, step } = await asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      const thread = await this.ownedThread(threadId, caller);
      // The run's row lock makes answers to one run take turns: of two answers to one question, one wins.
      const [run] = (await currentManager().query(
        `SELECT id, status, campus_id, target_school_id, pending_interrupts FROM agent_runs
          WHERE thread_id = $1 AND pending_interrupts @> $2::jsonb
          ORDER BY created_at DESC LIMIT 1 FOR UPDATE`,
        [thread.id, JSON.stringify([{ interruptId: dto.interruptId }])],
      )) as LockedRun[];
      const interrupt = run?.pending_interrupts.find((candidate) => candidate.interruptId === dto.interruptId);
      if (!run || !interrupt) throw new ConflictException(UNKNOWN_INTERRUPT_ERROR);
      if (interrupt.answered) throw new ConflictException(ALREADY_ANSWERED_ERROR);
      if (run.status !== 'interrupted') throw new ConflictException(STALE_INTERRUPT_ERROR);

      Object.assign(interrupt, { answered: true, answer: dto.answer, answeredAt: new Date().toISOString() });
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
          userId: caller.sub,
          answer: dto.answer,
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
      // Re-minted, not replayed: the caller's identity and reach are read again for the next step.
      const step: AgentRunRequest | undefined = resumed
        ? {
            kind: 'resume',
            context: await this.contextService.mint(
              { campusId: run.campus_id ?? undefined, targetSchoolId: run.target_school_id ?? undefined, runId: run.id, threadId: thread.id },
              caller,
            ),
            answers,
          }
        : undefined;
      return { result: { runId: run.id, resumed, pendingInterruptIds }, step };
    });
    if (step) await this.dispatch(caller, result.runId, step);
    return result;
  }

  /**
   * Publishes a run step once the unit of work that recorded it has committed. The worker may call its first tool the
   * moment it has the message, and the server refuses a call whose run it cannot read as running (or whose approval it
   * cannot read), so a step published inside the transaction raced its COMMIT: the bench's scale-out saw a first tool
   * call refused as "not part of a conversation in progress". A step the broker does not take fails its run, which
   * releases the thread for the next message, and the caller gets the 503.
   */
  private async dispatch(caller: JwtPayload, runId: string, step: AgentRunRequest): Promise<void> {
    try {
      await this.publisher.publish(step);
    } catch (error) {
      await asCaller(caller, () =>
        currentManager().query(`UPDATE agent_runs SET status = 'failed', error = $2, updated_at = now() WHERE id = $1 AND status = 'running'`, [
          runId,
          AGENT_UNAVAILABLE_ERROR,
        ]),
      ).catch((failure: unknown) =>
        this.logger.error(`Run ${runId} was not published and could not be marked failed: ${failure instanceof Error ? failure.message : String(failure)}`),
      );
      throw error;
    }
  }

  /**
   * POST /agent/context: a thread with one running run of its own for calling tools directly (the demo, the worker's
   * end-to-end tests), so the minted context's dispatch token names a run in flight. Nothing is published to the worker.
   */
  openDirectRun(dto: { campusId?: string; targetSchoolId?: string }, caller: JwtPayload): Promise<AgentRuntimeContext> {
    return asCaller(caller, async () => {
      const user = await this.identityService.assertCurrent(caller);
      const threadId = randomUUID();
      const runId = randomUUID();
      const context = await this.contextService.mint({ ...dto, runId, threadId }, caller);
      await repo(AgentThreadEntity).insert({ id: threadId, schoolId: user.schoolId, ownerId: user.id, title: DIRECT_RUN_TITLE });
      await repo(AgentRunEntity).insert({
        id: runId,
        threadId,
        schoolId: user.schoolId,
        ownerId: user.id,
        status: 'running',
        message: DIRECT_RUN_TITLE,
        campusId: context.runMode.mode === 'campus' ? context.runMode.campus.id : null,
        targetSchoolId: context.runMode.mode === 'school' ? (context.runMode.targetSchoolId ?? null) : null,
        pendingInterrupts: [],
        lastSeq: 0,
      });
      return context;
    });
  }

  /** The caller's run in the caller's thread, or 404. Inside a unit of work. */
  async ownedRun(threadId: string, runId: string, caller: JwtPayload): Promise<AgentRunEntity> {
    const run = await repo(AgentRunEntity).findOneBy({ id: runId, threadId, ownerId: caller.sub });
    if (!run) throw new NotFoundException(RUN_NOT_FOUND_ERROR);
    return run;
  }

  /** Another user's thread, from any school, is indistinguishable from one that does not exist. */
  private async ownedThread(threadId: string, caller: JwtPayload, options: { lock?: boolean } = {}): Promise<AgentThreadEntity> {
    const thread = await repo(AgentThreadEntity).findOne({
      where: { id: threadId, ownerId: caller.sub },
      ...(options.lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
    });
    if (!thread) throw new NotFoundException(THREAD_NOT_FOUND_ERROR);
    return thread;
  }
}
