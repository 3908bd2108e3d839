import { randomUUID } from 'node:crypto';
import { Injectable, Logger, NotFoundException } from '@nestjs/common';
import {
  ERROR_SENTENCES,
  type AgentRunRequest,
  type AgentRuntimeContext,
  type ResumeResponse,
  type RunSummary,
  type StartRunResponse,
  type ThreadDetail,
  type ThreadSummary,
} from '@naalya/agent-tools';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { IdentityService } from '../../core/auth/identity.service.js';
import { withCode } from '../../core/http/error-code.js';
import { repo } from '../../core/tenancy/tenant-context.js';
import { AgentContextService } from '../dispatch/agent-context.service.js';
import { AGENT_UNAVAILABLE_ERROR, AgentRunPublisher } from '../dispatch/agent-run-publisher.service.js';
import type { AgentRunEntity } from '../runs/agent-run.entity.js';
import { AgentRunStore } from '../runs/agent-run-store.service.js';
import { asCaller } from './agent-caller.guard.js';
import { AgentThreadEntity } from './agent-thread.entity.js';

export const THREAD_NOT_FOUND_ERROR = ERROR_SENTENCES.THREAD_NOT_FOUND;
export const DIRECT_RUN_TITLE = 'Direct tool calls';
const TITLE_LENGTH = 80;

export type CreateThreadDto = { title?: string };
export type StartRunDto = { message: string; campusId?: string; targetSchoolId?: string };
export type ResumeDto = { interruptId: string; answer: string };


const threadSummary = (thread: AgentThreadEntity): ThreadSummary => ({
  id: thread.id,
  title: thread.title,
  createdAt: thread.createdAt.toISOString(),
  updatedAt: thread.updatedAt.toISOString(),
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
  createdAt: run.createdAt.toISOString(),
  updatedAt: run.updatedAt.toISOString(),
});

/**
 * Threads, and the conversation in them as the caller drives it. Every call is one short unit of work as the caller,
 * checks that the caller owns the thread (another user's thread, in any school, reads as not found), and is backed
 * by RLS, which binds the rows to their school and owner. The run rows themselves are AgentRunStore's. Starting and
 * resuming publish the run step once that unit of work has committed (see dispatch): a step the broker did not take
 * fails its run and answers 503.
 */
@Injectable()
export class AgentThreadsService {
  private readonly logger = new Logger(AgentThreadsService.name);

  constructor(
    private readonly identityService: IdentityService,
    private readonly contextService: AgentContextService,
    private readonly publisher: AgentRunPublisher,
    private readonly runs: AgentRunStore,
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
      const runs = await this.runs.runsOf(thread.id);
      return { ...threadSummary(thread), runs: runs.map(runSummary) };
    });
  }

  async startRun(threadId: string, dto: StartRunDto, caller: JwtPayload): Promise<StartRunResponse> {
    const { runId, context } = await asCaller(caller, async () => {
      // Locking the thread serialises starts on it, so the store's check for an active run cannot race another start.
      const thread = await this.ownedThread(threadId, caller, { lock: true });
      const started = await this.runs.start(thread, dto.message, (runId) =>
        // Identity, campus and target school are checked and minted here, from the token and the database.
        this.contextService.mint({ campusId: dto.campusId, targetSchoolId: dto.targetSchoolId, runId, threadId: thread.id }, caller),
      );
      await repo(AgentThreadEntity).update(
        { id: thread.id },
        { updatedAt: new Date(), ...(thread.title ? {} : { title: dto.message.slice(0, TITLE_LENGTH) }) },
      );
      return started;
    });
    await this.dispatch(caller, runId, { kind: 'start', context, message: dto.message });
    return { runId };
  }

  async resume(threadId: string, dto: ResumeDto, caller: JwtPayload): Promise<ResumeResponse> {
    const { result, step } = await asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      const thread = await this.ownedThread(threadId, caller);
      const { run, resumed, pendingInterruptIds, answers } = await this.runs.recordAnswer(thread, dto, caller.sub);
      // Re-minted, not replayed: the caller's identity and reach are read again for the next step.
      const step: AgentRunRequest | undefined = resumed
        ? {
            kind: 'resume',
            context: await this.contextService.mint(
              { campusId: run.campusId ?? undefined, targetSchoolId: run.targetSchoolId ?? undefined, runId: run.id, threadId: thread.id },
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
      await asCaller(caller, () => this.runs.failIfRunning(runId, AGENT_UNAVAILABLE_ERROR)).catch((failure: unknown) =>
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
      const thread = { id: threadId, schoolId: user.schoolId, ownerId: user.id };
      await repo(AgentThreadEntity).insert({ ...thread, title: DIRECT_RUN_TITLE });
      await this.runs.openDirect(runId, thread, DIRECT_RUN_TITLE, context);
      return context;
    });
  }

  /** Another user's thread, from any school, is indistinguishable from one that does not exist. */
  private async ownedThread(threadId: string, caller: JwtPayload, options: { lock?: boolean } = {}): Promise<AgentThreadEntity> {
    const thread = await repo(AgentThreadEntity).findOne({
      where: { id: threadId, ownerId: caller.sub },
      ...(options.lock ? { lock: { mode: 'pessimistic_write' as const } } : {}),
    });
    if (!thread) throw withCode('THREAD_NOT_FOUND', new NotFoundException(THREAD_NOT_FOUND_ERROR));
    return thread;
  }
}
