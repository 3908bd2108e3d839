import { randomUUID } from 'node:crypto';
import { BadRequestException, Inject, Injectable, Logger, NotFoundException } from '@nestjs/common';
import {
  ERROR_SENTENCES,
  type AgentRuntimeContext,
  type CancelRunResponse,
  type MultitaskStrategy,
  type ResumeRequest,
  type ResumeResponse,
  type RunSummary,
  type StartRunResponse,
  type ThreadDetail,
  type ThreadSummary,
} from '@naalya/agent-tools';
import { currentTraceId } from '@naalya/telemetry';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { IdentityService } from '../../core/auth/identity.service.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { withCode } from '../../core/http/error-code.js';
import { decodeCursor, encodeCursor } from '../../core/audit/audit-cursor.js';
import { currentManager, repo } from '../../core/tenancy/tenant-context.js';
import { AgentContextService } from '../dispatch/agent-context.service.js';
import { AgentRunPublisher } from '../dispatch/agent-run-publisher.service.js';
import { RunLifecycle, type PendingStep } from '../lifecycle/run-lifecycle.service.js';
import { SchoolModelPolicies } from '../model-policy/school-model-policies.service.js';
import type { AgentRunEntity } from '../runs/agent-run.entity.js';
import { AgentRunStore, directRunLimit, questionPending, runInProgress, runQueueFull, runsInFlightLimit, threadLimit } from '../runs/agent-run-store.service.js';
import { asCaller } from './agent-caller.guard.js';
import { AgentThreadEntity } from './agent-thread.entity.js';

export const THREAD_NOT_FOUND_ERROR = ERROR_SENTENCES.THREAD_NOT_FOUND;
export const DIRECT_RUN_TITLE = 'Direct tool calls';
const TITLE_LENGTH = 80;

export type CreateThreadDto = { title?: string };
export type StartRunDto = { message: string; campusId?: string; targetSchoolId?: string; multitaskStrategy?: MultitaskStrategy };
export type ResumeDto = ResumeRequest;
/** `cursor` as given by the previous page; `q` already checked to hold at least one word. */
export type ListThreadsDto = { limit: number; cursor?: string; q?: string };
export type ThreadPage = { threads: ThreadSummary[]; next: string | null };

/** The letters and digits of a search, each a prefix ("geo" finds "geography"), all of them required. */
export const searchWords = (q: string): string[] => q.match(/[\p{L}\p{N}]+/gu)?.slice(0, 8) ?? [];
const tsQuery = (q: string): string => searchWords(q).map((word) => `${word}:*`).join(' & ');

/**
 * The search's condition on threads `t` of the owner in parameter `owner`, for the to_tsquery text in parameter
 * `query`: the title, or any run's message (what the user sent) or reply (what the assistant answered), each through its
 * full-text index (migrations 1764662400016 and 1764662400019).
 */
export const threadSearchCondition = (owner: string, query: string): string => {
  const matches = `to_tsquery('simple', ${query})`;
  return `(to_tsvector('simple', coalesce(t.title, '')) @@ ${matches}
    OR t.id IN (SELECT r.thread_id FROM agent_runs r WHERE r.owner_id = ${owner}
                  AND (to_tsvector('simple', r.message) @@ ${matches} OR to_tsvector('simple', r.reply) @@ ${matches})))`;
};


const threadSummary = (thread: AgentThreadEntity): ThreadSummary => ({
  id: thread.id,
  title: thread.title,
  createdAt: thread.createdAt.toISOString(),
  updatedAt: thread.updatedAt.toISOString(),
});

const runSummary = (run: AgentRunEntity): RunSummary => ({
  id: run.id,
  kind: run.kind,
  status: run.status,
  message: run.message,
  campusId: run.campusId,
  targetSchoolId: run.targetSchoolId,
  interrupts: run.pendingInterrupts.map(({ interruptId, question, askedBy, answered, confirmation, voided }) => ({
    interruptId,
    question,
    askedBy,
    answered,
    ...(confirmation ? { confirm: true as const } : {}),
    expiresAt: run.status === 'interrupted' && !answered && run.expiresAt ? run.expiresAt.toISOString() : null,
    ...(voided ? { voided: true as const } : {}),
  })),
  error: run.error,
  errorCode: run.errorCode,
  lastSeq: run.lastSeq,
  usage: { inputTokens: run.inputTokens, outputTokens: run.outputTokens },
  traceId: run.traceId,
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
    private readonly lifecycle: RunLifecycle,
    private readonly policies: SchoolModelPolicies,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  createThread(dto: CreateThreadDto, caller: JwtPayload): Promise<ThreadSummary> {
    return asCaller(caller, async () => {
      const user = await this.identityService.assertCurrent(caller);
      await this.runs.lockUserLimits(user.id);
      if ((await this.runs.conversationThreads(user.id)) >= this.config.AGENT_THREADS_PER_USER) throw threadLimit();
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

  /**
   * The caller's threads, most recently active first, one page at a time. Keyset on (updated_at, id) at full
   * microsecond precision, so pages neither repeat nor skip a row (a thread that gets a new message while the caller
   * pages moves to the top, as it should). With `q`, only threads whose title, one of the user's own messages
   * (agent_runs.message) or one of the assistant's replies (agent_runs.reply) holds every word (threadSearchCondition). owner_id is
   * filtered here and row-level security applies underneath: another user's thread, in any school, never matches,
   * whatever a cursor is forged to say.
   */
  listThreads(dto: ListThreadsDto, caller: JwtPayload): Promise<ThreadPage> {
    return asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      const after = dto.cursor === undefined ? null : decodeCursor(dto.cursor);
      if (dto.cursor !== undefined && !after) throw new BadRequestException('Invalid request: cursor: not a cursor this API gave');
      const params: unknown[] = [caller.sub];
      const where = ['t.owner_id = $1'];
      if (dto.q !== undefined) {
        params.push(tsQuery(dto.q));
        where.push(threadSearchCondition('$1', `$${params.length}`));
      }
      if (after) {
        params.push(after.micros, after.id);
        where.push(`(t.updated_at, t.id) < (timestamptz 'epoch' + $${params.length - 1}::bigint * interval '1 microsecond', $${params.length}::uuid)`);
      }
      // One row past the page says whether there is another, without counting.
      params.push(dto.limit + 1);
      const rows = (await currentManager().query(
        `SELECT t.id, t.title, t.created_at, t.updated_at, (extract(epoch FROM t.updated_at) * 1000000)::bigint::text AS position
           FROM agent_threads t WHERE ${where.join(' AND ')}
          ORDER BY t.updated_at DESC, t.id DESC LIMIT $${params.length}`,
        params,
      )) as { id: string; title: string | null; created_at: Date; updated_at: Date; position: string }[];
      const page = rows.slice(0, dto.limit);
      const last = page.at(-1);
      return {
        threads: page.map((row) => ({ id: row.id, title: row.title, createdAt: row.created_at.toISOString(), updatedAt: row.updated_at.toISOString() })),
        next: rows.length > dto.limit && last ? encodeCursor(last.position, last.id) : null,
      };
    });
  }

  /** Renames a thread of the caller's (anyone else's is not found). Not activity: the thread keeps its place in the list. */
  renameThread(threadId: string, title: string, caller: JwtPayload): Promise<ThreadSummary> {
    return asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      const thread = await this.ownedThread(threadId, caller, { lock: true });
      await currentManager().query(`UPDATE agent_threads SET title = $1 WHERE id = $2 AND owner_id = $3`, [title, thread.id, caller.sub]);
      return threadSummary({ ...thread, title });
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

  /**
   * A new message in a thread. With no active run it starts at once; otherwise `multitaskStrategy` decides: reject
   * (409), enqueue (a queued run, started when the active one ends; not while a question waits for its answer), or
   * interrupt (the active run is cancelled in the same unit of work, then the new one starts).
   */
  async startRun(threadId: string, dto: StartRunDto, caller: JwtPayload): Promise<StartRunResponse> {
    const strategy = dto.multitaskStrategy ?? 'reject';
    const { runId, status, steps } = await asCaller(caller, async () => {
      // Locking the thread serialises starts on it, so the checks below cannot race another start.
      const thread = await this.ownedThread(threadId, caller, { lock: true });
      const active = await this.runs.activeRun(thread.id);
      const busy = active !== null || (await this.runs.queuedCount(thread.id)) > 0;
      const runId = randomUUID();
      const newRun = { id: runId, thread, message: dto.message, kind: 'agent' as const, campusId: dto.campusId ?? null, targetSchoolId: dto.targetSchoolId ?? null };
      // Identity, campus and target school are checked here, from the token and the database, whatever happens next.
      const validate = () => this.contextService.mint({ campusId: dto.campusId, targetSchoolId: dto.targetSchoolId, runId, threadId: thread.id }, caller);
      await this.touch(thread, dto.message);
      if (busy && strategy === 'reject') throw runInProgress();
      // A run, queued or not, would be stopped at its first model call: nothing is recorded or sent.
      await this.policies.assertDayNotSpent(thread.schoolId);
      // After the thread's lock, like every start: a start holds its thread, then its owner's limits.
      await this.runs.lockUserLimits(caller.sub);
      if (busy && strategy === 'enqueue') {
        if (active?.status === 'interrupted') throw questionPending();
        if ((await this.runs.queuedCount(thread.id)) >= this.config.AGENT_RUN_QUEUE_LIMIT) throw runQueueFull();
        await this.assertRunSlot(caller);
        await validate();
        await this.runs.insert({ ...newRun, status: 'queued' });
        return { runId, status: 'queued' as const, steps: [] };
      }
      if (active && strategy === 'interrupt') await this.lifecycle.cancelHeld(active.id);
      await this.assertRunSlot(caller);
      await validate();
      await this.runs.insert({ ...newRun, status: 'running' });
      return { runId, status: 'running' as const, steps: [await this.lifecycle.dispatchStep(runId, { kind: 'start' }, caller)] };
    });
    await this.publishOrFail(caller, steps);
    const traceId = currentTraceId();
    return { runId, status, ...(traceId ? { traceId } : {}) };
  }

  async resume(threadId: string, dto: ResumeDto, caller: JwtPayload): Promise<ResumeResponse> {
    const { result, steps } = await asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      const thread = await this.ownedThread(threadId, caller);
      const { run, resumed, pendingInterruptIds, answers } = await this.runs.recordAnswer(thread, dto, caller.sub);
      // The answer would resume the run into a model call: refused, it rolls back and the question still waits.
      if (resumed) await this.policies.assertDayNotSpent(thread.schoolId);
      const steps = resumed ? [await this.lifecycle.dispatchStep(run.id, { kind: 'resume', answers }, caller)] : [];
      return { result: { runId: run.id, resumed, pendingInterruptIds }, steps };
    });
    await this.publishOrFail(caller, steps);
    const traceId = currentTraceId();
    return { ...result, ...(traceId ? { traceId } : {}) };
  }

  /**
   * Stops a run of the caller's (owner only; idempotent). The tokens of the run are revoked and the cancel recorded in
   * one unit of work, which waits for any tool call of the run still inside its transaction: a write either committed
   * before this answers (and is listed in committedWrites) or commits nothing. The worker learns of it at its next
   * lease renewal and aborts. The thread's next queued run starts.
   */
  async cancelRun(threadId: string, runId: string, caller: JwtPayload): Promise<CancelRunResponse> {
    const { response, steps } = await asCaller(caller, async () => {
      const run = await this.runs.ownedRun(threadId, runId, caller);
      const cancelled = await this.lifecycle.cancelHeld(run.id);
      const steps = [await this.lifecycle.startNextQueued(threadId, caller)];
      const status = cancelled ? 'cancelled' : ((await this.runs.statusOf(run.id)) ?? run.status);
      const committedWrites = cancelled ? cancelled.committedWrites : await this.runs.committedWrites(run.id);
      return { response: { runId: run.id, status, cancelled: cancelled !== null, committedWrites }, steps };
    });
    await this.lifecycle.publish(steps);
    return response;
  }

  /**
   * Deletes a thread of the caller's (owner only: anyone else's, in any school, is not found) with its runs, their
   * events and its approvals (ON DELETE CASCADE); its audit rows stay, as audit_log keeps no key onto them. Refused
   * (409 RUN_IN_PROGRESS) while a run of the thread is running, waiting for an answer or queued: its worker would go on
   * writing checkpoints and events for a thread that no longer exists. Once the rows are gone the workers are told to
   * delete its checkpoints; if the broker cannot take that message the thread stays deleted and the worker's checkpoint
   * retention sweep removes them later (CHECKPOINT_RETENTION_DAYS).
   */
  async deleteThread(threadId: string, caller: JwtPayload): Promise<void> {
    await asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      // Locking the thread serialises this with a start on it, so no run can begin between the check and the delete.
      const thread = await this.ownedThread(threadId, caller, { lock: true });
      if ((await this.runs.activeRun(thread.id)) !== null || (await this.runs.queuedCount(thread.id)) > 0) throw runInProgress();
      await currentManager().query(`DELETE FROM agent_threads WHERE id = $1 AND owner_id = $2`, [thread.id, caller.sub]);
    });
    try {
      await this.publisher.publishThreadDeleted(threadId);
    } catch (error) {
      this.logger.warn(`Thread ${threadId} was deleted, but its checkpoints could not be handed to a worker now (the checkpoint retention sweep removes them): ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Under lockUserLimits: the run about to be recorded is refused if the caller already has the most allowed in flight. */
  private async assertRunSlot(caller: JwtPayload): Promise<void> {
    if ((await this.runs.runsInFlight(caller.sub)) >= this.config.AGENT_RUNS_IN_FLIGHT_PER_USER) throw runsInFlightLimit();
  }

  /**
   * Publishes steps once the unit of work that recorded them has committed. The worker may call its first tool the
   * moment it has the message, and the server refuses a call whose run it cannot read as running, so a step published
   * inside the transaction raced its COMMIT. A step the broker does not take fails its run (the thread is free for the
   * next message) and the caller gets the 503.
   */
  private async publishOrFail(caller: JwtPayload, steps: PendingStep[]): Promise<void> {
    for (const step of steps) {
      try {
        await this.publisher.publish(step);
      } catch (error) {
        const { runId, threadId } = step.context.run;
        await asCaller(caller, () => this.lifecycle.fail(runId, threadId, 'AGENT_UNAVAILABLE')).catch((failure: unknown) =>
          this.logger.error(`Run ${runId} was not published and could not be marked failed: ${failure instanceof Error ? failure.message : String(failure)}`),
        );
        throw error;
      }
    }
  }

  /** Names an untitled thread after its first message, and moves it up the caller's list. */
  private touch(thread: AgentThreadEntity, message: string): Promise<unknown> {
    return repo(AgentThreadEntity).update({ id: thread.id }, { updatedAt: new Date(), ...(thread.title ? {} : { title: message.slice(0, TITLE_LENGTH) }) });
  }

  /**
   * POST /agent/context: a direct run (no worker, no lease) in a thread of its own, for calling tools directly (the
   * demo, the tests, the battery, the bench): its context's dispatch token names a run in flight until the caller
   * closes it or the token expires. A user has a bounded number open at once.
   */
  /** `ttlSeconds` shortens the run's life and its token's (an MCP session ends with its connected-app token). */
  openDirectRun(dto: { campusId?: string; targetSchoolId?: string; ttlSeconds?: number }, caller: JwtPayload): Promise<AgentRuntimeContext> {
    return asCaller(caller, async () => {
      const user = await this.identityService.assertCurrent(caller);
      await this.runs.lockUserLimits(user.id);
      if ((await this.runs.openDirectRuns(user.id)) >= this.config.AGENT_DIRECT_RUNS_PER_USER) throw directRunLimit();
      const threadId = randomUUID();
      const runId = randomUUID();
      const context = await this.contextService.mint({ ...dto, runId, threadId }, caller);
      const thread = { id: threadId, schoolId: user.schoolId, ownerId: user.id };
      await repo(AgentThreadEntity).insert({ ...thread, title: DIRECT_RUN_TITLE });
      await this.runs.insert({
        id: runId,
        thread,
        message: DIRECT_RUN_TITLE,
        kind: 'direct',
        status: 'running',
        campusId: context.runMode.mode === 'campus' ? context.runMode.campus.id : null,
        targetSchoolId: context.runMode.mode === 'school' ? (context.runMode.targetSchoolId ?? null) : null,
        // The run ends when its token does (minted with the same lifetime a moment ago).
        expiresAt: new Date(Date.now() + Math.min(dto.ttlSeconds ?? Infinity, this.config.DISPATCH_TOKEN_TTL_SECONDS) * 1000),
      });
      return context;
    });
  }

  /** Ends a direct run of the caller's (idempotent): its token is refused from now on. */
  closeDirectRun(runId: string, caller: JwtPayload): Promise<void> {
    return asCaller(caller, async () => {
      const run = await this.runs.ownedDirectRun(runId, caller);
      const held = await this.runs.lock(run.id);
      if (held?.status === 'running') await this.lifecycle.close(run.id, run.threadId);
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
