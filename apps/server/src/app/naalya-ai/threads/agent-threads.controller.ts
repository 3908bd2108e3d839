import type { ServerResponse } from 'node:http';
import { Body, Controller, Delete, Get, Headers, HttpCode, NotFoundException, Param, Patch, Post, Query, Res } from '@nestjs/common';
import {
  AGENT_RUN_MODES,
  ERROR_SENTENCES,
  MULTITASK_STRATEGIES,
  type CancelRunResponse,
  agentMapFor,
  type AgentMap,
  type ResumeResponse,
  type StartRunResponse,
  type ThreadDetail,
  type ThreadSummary,
} from '@naalya/agent-tools';
import { z } from 'zod';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { IdentityService } from '../../core/auth/identity.service.js';
import { withCode } from '../../core/http/error-code.js';
import { parseDto } from '../../core/http/parse-dto.js';
import { CapabilitiesService } from '../../teaching/capabilities.service.js';
import { AgentRunStreamService } from '../events/agent-run-stream.service.js';
import { AgentCaller, AgentRoutes, asCaller } from './agent-caller.guard.js';
import { NEXT_CURSOR_HEADER } from '../../core/audit/audit-log.controller.js';
import { AgentThreadsService, searchWords } from './agent-threads.service.js';

const createThreadSchema = z.strictObject({ title: z.string().trim().min(1).max(200).optional() });
const startRunSchema = z.strictObject({
  message: z.string().trim().min(1).max(4_000),
  campusId: z.guid().optional(),
  targetSchoolId: z.guid().optional(),
  multitaskStrategy: z.enum(MULTITASK_STRATEGIES).optional(),
});
// `edits`: a person's new values for a confirmation's editable arguments (the tool's schema checks them at resume).
const resumeSchema = z.strictObject({
  interruptId: z.string().min(1).max(100),
  answer: z.string().max(4_000),
  edits: z.record(z.string().min(1).max(100), z.unknown()).refine((edits) => Object.keys(edits).length > 0, 'must name an argument').optional(),
});
const renameThreadSchema = z.strictObject({ title: z.string().trim().min(1).max(200) });
const listThreadsSchema = z.strictObject({
  /** Opaque: the position after the last thread of the previous page, from its x-next-cursor header. */
  cursor: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(100),
  /** Words to find in titles and the user's messages; a search with none (only punctuation) is refused, not "everything". */
  q: z.string().trim().min(1).max(200).refine((q) => searchWords(q).length > 0, 'must contain a letter or digit').optional(),
});
const mapQuerySchema = z.strictObject({ mode: z.enum(AGENT_RUN_MODES).default('school') });

/** An id that cannot exist reads like one that is not yours: not found. */
const idParam = (value: string, code: 'THREAD_NOT_FOUND' | 'RUN_NOT_FOUND'): string => {
  if (!z.guid().safeParse(value).success) throw withCode(code, new NotFoundException(ERROR_SENTENCES[code]));
  return value;
};

@Controller('agent')
@AgentRoutes()
export class AgentThreadsController {
  constructor(
    private readonly threads: AgentThreadsService,
    private readonly streams: AgentRunStreamService,
    private readonly identityService: IdentityService,
    private readonly capabilitiesService: CapabilitiesService,
  ) {}

  /** The server makes the thread's id; a client cannot choose one. */
  @Post('threads')
  createThread(@Body() body: unknown, @AgentCaller() caller: JwtPayload): Promise<ThreadSummary> {
    return this.threads.createThread(parseDto(createThreadSchema, body), caller);
  }

  /** The body stays a plain array (the Hub reads one); the next page's cursor rides in x-next-cursor, absent on the last page. */
  @Get('threads')
  async listThreads(
    @Query() query: unknown,
    @AgentCaller() caller: JwtPayload,
    @Res({ passthrough: true }) response: { setHeader(name: string, value: string): void },
  ): Promise<ThreadSummary[]> {
    const { threads, next } = await this.threads.listThreads(parseDto(listThreadsSchema, query), caller);
    if (next) response.setHeader(NEXT_CURSOR_HEADER, next);
    return threads;
  }

  /** Renames the caller's thread; anyone else's is not found. */
  @Patch('threads/:threadId')
  renameThread(@Param('threadId') threadId: string, @Body() body: unknown, @AgentCaller() caller: JwtPayload): Promise<ThreadSummary> {
    return this.threads.renameThread(idParam(threadId, 'THREAD_NOT_FOUND'), parseDto(renameThreadSchema, body).title, caller);
  }

  @Get('threads/:threadId')
  getThread(@Param('threadId') threadId: string, @AgentCaller() caller: JwtPayload): Promise<ThreadDetail> {
    return this.threads.getThread(idParam(threadId, 'THREAD_NOT_FOUND'), caller);
  }

  /** Deletes the caller's thread with its runs and events (its audit rows stay); 409 while a run of it is in progress. */
  @Delete('threads/:threadId')
  @HttpCode(204)
  async deleteThread(@Param('threadId') threadId: string, @AgentCaller() caller: JwtPayload): Promise<void> {
    await this.threads.deleteThread(idParam(threadId, 'THREAD_NOT_FOUND'), caller);
  }

  /** Records the run, mints its context and publishes it; while another run is active, multitaskStrategy decides (409 by default). */
  @Post('threads/:threadId/runs')
  startRun(@Param('threadId') threadId: string, @Body() body: unknown, @AgentCaller() caller: JwtPayload): Promise<StartRunResponse> {
    return this.threads.startRun(idParam(threadId, 'THREAD_NOT_FOUND'), parseDto(startRunSchema, body), caller);
  }

  /** Stops a run (owner only, idempotent): what it committed stays, and is listed. */
  @Post('threads/:threadId/runs/:runId/cancel')
  @HttpCode(200)
  cancelRun(@Param('threadId') threadId: string, @Param('runId') runId: string, @AgentCaller() caller: JwtPayload): Promise<CancelRunResponse> {
    return this.threads.cancelRun(idParam(threadId, 'THREAD_NOT_FOUND'), idParam(runId, 'RUN_NOT_FOUND'), caller);
  }

  /** Answers one pending question by id; the run resumes once every pending question is answered. */
  @Post('threads/:threadId/resume')
  @HttpCode(200)
  resume(@Param('threadId') threadId: string, @Body() body: unknown, @AgentCaller() caller: JwtPayload): Promise<ResumeResponse> {
    return this.threads.resume(idParam(threadId, 'THREAD_NOT_FOUND'), parseDto(resumeSchema, body), caller);
  }

  /** Server-sent events: replay after Last-Event-ID, then live until the run's step ends. */
  @Get('threads/:threadId/runs/:runId/events')
  events(
    @Param('threadId') threadId: string,
    @Param('runId') runId: string,
    @Headers('last-event-id') lastEventId: string | undefined,
    @AgentCaller() caller: JwtPayload,
    @Res() response: ServerResponse,
  ): Promise<void> {
    const ids = { threadId: idParam(threadId, 'THREAD_NOT_FOUND'), runId: idParam(runId, 'RUN_NOT_FOUND') };
    return this.streams.stream(caller, ids, lastEventId, response);
  }

  /** The caller's roster (Rover first) and each speaker's belt for a run mode; display only. */
  @Get('map')
  map(@Query() query: unknown, @AgentCaller() caller: JwtPayload): Promise<AgentMap> {
    const { mode } = parseDto(mapQuerySchema, query);
    return asCaller(caller, async () => {
      await this.identityService.assertCurrent(caller);
      return agentMapFor(await this.capabilitiesService.resolve(caller), mode);
    });
  }
}
