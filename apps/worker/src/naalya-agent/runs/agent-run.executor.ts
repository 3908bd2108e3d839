import {
  ERROR_SENTENCES,
  agentRunEventSchema,
  eligibleAgentRoles,
  toRunInterrupt,
  type AgentRunRequest,
  type AgentSpeaker,
  type RunErrorCode,
} from '@naalya/agent-tools';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { Command, GraphRecursionError, type BaseCheckpointSaver, type StateSnapshot } from '@langchain/langgraph';
import { Logger, type LoggerService } from '@nestjs/common';
import type { UsageReporter } from '../core/graph/model-call.middleware.js';
import { ROVER_AGENT_NAME, createRoverGraph } from '../core/graph/rover.graph.js';
import { invokeAgent } from '../core/graph/tracing.middleware.js';
import { modelCallErrorIn } from '../core/model/model-errors.js';
import type { SubagentDeps } from '../core/subagents/subagent.types.js';
import type { AgentToolCaller } from '../core/tools/agent-tool-caller.js';
import { toolCallIdempotencyKey } from '../core/tools/build-agent-tools.js';
import { TimedToolCaller } from '../core/tools/timed-tool-caller.js';
import { FencedCheckpointSaver } from './fenced-checkpoint-saver.js';
import { RunEventBuffer, RunEventPublishError, type RunEventSink } from './run-event.buffer.js';
import type { RunLeases } from './run-lease.client.js';
import type { RunUsageReports } from './run-usage.client.js';
import { RunEventTranslator, snapshotMessages, toAgentInterrupts, type RunEventDraft } from './run-event.translator.js';
import { StepLease, type ClaimRefusal } from './step-lease.js';

export { RunEventPublishError, type RunEventMeta, type RunEventSink } from './run-event.buffer.js';

type ChatModel = ReturnType<SubagentDeps['modelFor']>;

export type AgentRunExecutorDeps = {
  toolCaller: AgentToolCaller;
  checkpointer: BaseCheckpointSaver;
  /** A fresh model for one speaker of one run step. */
  chatModel: (speaker: AgentSpeaker) => Promise<ChatModel> | ChatModel;
  events: RunEventSink;
  /** The run lease RPC: a step runs only while the server grants it its lease. */
  leases: RunLeases;
  /** The usage report RPC: every model call's tokens, answered before its reply is acted on. */
  usage: RunUsageReports;
  logger?: LoggerService;
  /** Model and tool steps one run step may take before it is stopped. Default 40. */
  recursionLimit?: number;
  /** How long a step's first event after an idle spell waits for others to share its message (RunEventBuffer). */
  eventLingerMs?: number;
};

/**
 * `dropped`: the server granted no lease (or no token to claim one with), nothing ran and nothing was published.
 * `stopped`: the lease was lost mid-step (cancelled, superseded, ended, expired); nothing more was published.
 */
export type RunStepOutcome = 'success' | 'interrupt' | 'error' | 'dropped' | 'stopped';

// The new message of a start step carries an id derived from the run, so a redelivered start finds it in
// the checkpoint and continues that run instead of adding the message a second time.
export const humanMessageId = (runId: string) => `human-${runId}`;

type Plan =
  | { kind: 'run'; input: { messages: BaseMessage[] } | Command | null }
  | { kind: 'report' }
  | { kind: 'refuse'; code: RunErrorCode };

// The sentence is safe to show: never the error's own text.
const runError = (code: RunErrorCode) => ({ type: 'RUN_ERROR' as const, message: ERROR_SENTENCES[code], code });

// Each with the task it is pending in: a specialist's question is pending in the task that runs the specialist.
const pendingInterrupts = (snapshot: StateSnapshot) =>
  snapshot.tasks.flatMap((task) => (task.interrupts ?? []).map((interrupt) => ({ ...interrupt, taskId: task.id })));

const messagesOf = (snapshot: StateSnapshot): BaseMessage[] => {
  const values = snapshot.values as { messages?: BaseMessage[] } | undefined;
  return values?.messages ?? [];
};

// The step is safe to repeat: a redelivered request (the worker died before acknowledging it) finds its
// own progress in the checkpoint and continues or reports it, and completed tool calls are not made again
// (LangGraph keeps finished tasks' writes; the server's ledger answers a replayed callId from its record).
const planStep = (request: AgentRunRequest, snapshot: StateSnapshot): Plan => {
  const pending = pendingInterrupts(snapshot);
  const messages = messagesOf(snapshot);
  const continueOrReport = (): Plan => {
    if (pending.length > 0) return { kind: 'report' };
    return snapshot.next.length > 0 ? { kind: 'run', input: null } : { kind: 'report' };
  };

  if (request.kind === 'start') {
    const id = humanMessageId(request.context.run.runId);
    if (messages.some((message) => message.id === id)) return continueOrReport();
    // A question still pending in the checkpoint was voided by the server (a cancel, the interrupt strategy, an
    // expiry): it dispatches a new message only once no question of the thread waits. The new message runs; the
    // model is told the unanswered call's outcome (stoppedToolCallsMiddleware).
    return { kind: 'run', input: { messages: [new HumanMessage({ id, content: request.message })] } };
  }

  // Several questions may be pending; each answer is bound to its question by the interrupt id.
  const answered = pending.filter((interrupt) => interrupt.id !== undefined && interrupt.id in request.answers);
  if (answered.length > 0) {
    return { kind: 'run', input: new Command({ resume: Object.fromEntries(answered.map((interrupt) => [interrupt.id, request.answers[interrupt.id as string]])) }) };
  }
  if (messages.length === 0) return { kind: 'refuse', code: 'NOTHING_PENDING' };
  return continueOrReport();
};

const safeErrorFor = (error: unknown, signal: AbortSignal | undefined): RunErrorCode => {
  if (signal?.aborted) return 'STEP_TIMED_OUT';
  if (error instanceof GraphRecursionError) return 'TOO_MANY_STEPS';
  return modelCallErrorIn(error)?.code ?? 'RUN_FAILED';
};

// The claims the server refuses on a school's rule: it has failed the run itself, with the sentence the user reads.
const SCHOOL_RULE_REFUSALS: Partial<Record<ClaimRefusal, string>> = {
  model_not_allowed: "the school's data choice does not allow this worker's model",
  token_budget_spent: "the school's daily token budget is spent",
};

/**
 * One run step: claims the step's lease, builds Rover and the eligible specialists for this turn, streams the graph,
 * and publishes what happened as run events, from RUN_STARTED to RUN_FINISHED (success, or interrupt with the pending
 * questions) or RUN_ERROR with a message safe to show. Graph failures become RUN_ERROR and the step counts as handled;
 * only a failure to publish is thrown, so the message is not acknowledged as done.
 *
 * The server decides whether the step may run: without a granted claim nothing is read, called or published. While it
 * runs, the lease is renewed every third of its length; once it is lost (the run was cancelled, or given to another
 * worker) the graph and its model calls are aborted and nothing more is published, not even RUN_ERROR.
 */
export class AgentRunExecutor {
  private readonly logger: LoggerService;
  /**
   * The steps this process is running, by dispatch token: the last delivery of each. A copy of one of them (its
   * delivery requeued when the channel dropped, and redelivered here while the first still runs) must not run beside
   * it: the server grants the lease again to the same worker (a claim must stay idempotent), so both would run and both
   * would publish. The copy waits for the one before it to end, then claims: refused once that one has ended the step,
   * granted (and continued from the checkpoint) if it failed without ending it.
   */
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: AgentRunExecutorDeps) {
    this.logger = deps.logger ?? new Logger(AgentRunExecutor.name);
  }

  /** `signal`: the transport's, aborted when the step's time limit passes or shutdown outlives the drain. */
  async execute(request: AgentRunRequest, signal?: AbortSignal): Promise<RunStepOutcome> {
    const { runId, threadId } = request.context.run;
    const dispatchToken = request.context.dispatchToken;
    if (!dispatchToken) {
      this.logger.warn(`Run ${runId} (thread ${threadId}) dropped before it ran: its step carries no dispatch token, so no lease can be claimed.`);
      return 'dropped';
    }
    const before = this.running.get(dispatchToken);
    if (before) this.logger.warn(`Run ${runId} (thread ${threadId}): a copy of a step this worker is running arrived (redelivered); it waits for that one to end.`);
    const current = (before ?? Promise.resolve()).catch(() => undefined).then(() => this.claimAndRun(request, dispatchToken, signal));
    this.running.set(dispatchToken, current);
    try {
      return await current;
    } finally {
      if (this.running.get(dispatchToken) === current) this.running.delete(dispatchToken);
    }
  }

  private async claimAndRun(request: AgentRunRequest, dispatchToken: string, signal: AbortSignal | undefined): Promise<RunStepOutcome> {
    const { runId, threadId } = request.context.run;
    const claim = await StepLease.claim({ leases: this.deps.leases, dispatchToken, runId, logger: this.logger });
    if (!claim.granted) {
      const rule = SCHOOL_RULE_REFUSALS[claim.reason];
      if (rule) {
        this.logger.log(`Run ${runId} (thread ${threadId}) not run: ${rule} (${claim.reason}); nothing was sent to the model, and the server has failed the run.`);
        return 'dropped';
      }
      this.logger.warn(
        `Run ${runId} (thread ${threadId}) dropped before it ran: the server granted no lease (${claim.reason}${claim.detail ? `: ${claim.detail}` : ''}).`,
      );
      return 'dropped';
    }
    const { lease } = claim;
    let ended = false;
    try {
      const outcome = await this.runStep(request, dispatchToken, lease, signal);
      ended = true;
      return lease.lost ? 'stopped' : outcome;
    } finally {
      lease.stop();
      // Only a step that ended normally gives its lease back; a thrown one leaves it to expire.
      if (ended) lease.release();
    }
  }

  private async runStep(request: AgentRunRequest, dispatchToken: string, lease: StepLease, transportSignal: AbortSignal | undefined): Promise<RunStepOutcome> {
    const ids = { runId: request.context.run.runId, threadId: request.context.run.threadId };
    // Batched: the step goes on while its events are confirmed, and flushes before it ends (so before its ack).
    const buffer = new RunEventBuffer({
      sink: this.deps.events,
      meta: { dispatchToken },
      runId: ids.runId,
      mayPublish: () => lease.held(),
      lingerMs: this.deps.eventLingerMs,
    });
    const publish = async (draft: RunEventDraft): Promise<void> => {
      // A step without its lease publishes nothing: the server would refuse it, and a cancelled run must not end twice.
      if (!lease.held()) return;
      await buffer.push(agentRunEventSchema.parse({ ...draft, ...ids, timestamp: Date.now() }));
    };
    const outcome = await this.publishStep(request, lease, transportSignal, publish, () => buffer.flush(), this.usageReporter(ids.runId, dispatchToken, lease));
    try {
      await buffer.flush();
    } catch (error) {
      // Without its lease the step is over for this worker whatever the broker said: the server refuses its events.
      if (!(error instanceof RunEventPublishError) || lease.held()) throw error;
    }
    return outcome;
  }

  /**
   * Reports a model call's tokens as the step's lease holder and waits for the answer. "Stop" (the school's daily budget
   * or the step's own is spent, or the lease is gone): the server has already failed the run and written its RUN_ERROR,
   * so the step stops like one whose lease was lost and publishes nothing more. No answer at all: the server may not have
   * counted the call, and going on would spend tokens nobody counts, so the step stops the same way (fail closed); its
   * lease then expires and the server's sweeper dispatches the step again from its checkpoint, as after any lost worker.
   */
  private usageReporter(runId: string, dispatchToken: string, lease: StepLease): UsageReporter {
    return async (usage) => {
      let reply: Awaited<ReturnType<RunUsageReports['report']>>;
      try {
        reply = await this.deps.usage.report(dispatchToken, usage);
      } catch (error) {
        this.logger.warn(`Run ${runId}: its usage report got no answer (${error instanceof Error ? error.message : String(error)}); the server could not count this model call.`);
        lease.surrender('usage_unanswered');
        throw lease.signal.reason;
      }
      if (!reply.proceed) {
        lease.surrender(reply.reason);
        throw lease.signal.reason;
      }
    };
  }

  private async publishStep(
    request: AgentRunRequest,
    lease: StepLease,
    transportSignal: AbortSignal | undefined,
    publish: (draft: RunEventDraft) => Promise<void>,
    flush: () => Promise<void>,
    reportUsage: UsageReporter,
  ): Promise<RunStepOutcome> {
    const { context } = request;
    const ids = { runId: context.run.runId, threadId: context.run.threadId };
    // Either way the step stops: its lease is gone, or the transport gave up on it.
    const signal = transportSignal ? AbortSignal.any([lease.signal, transportSignal]) : lease.signal;
    await publish({ type: 'RUN_STARTED' });
    // Confirmed before the model is called: a step whose events cannot reach the broker fails before it does anything.
    await flush();
    try {
      const toolCaller = new TimedToolCaller(this.deps.toolCaller, signal);
      const speakers: AgentSpeaker[] = ['rover', ...eligibleAgentRoles(context.capabilities)];
      const models = new Map(await Promise.all(speakers.map(async (speaker) => [speaker, await this.deps.chatModel(speaker)] as const)));
      const modelFor = (speaker: AgentSpeaker): ChatModel => {
        const model = models.get(speaker);
        if (!model) throw new Error(`No model was made for ${speaker}.`);
        return model;
      };
      // Nor does it write the thread's checkpoints: only the worker writes them, so only the worker can fence them.
      const checkpointer = new FencedCheckpointSaver(this.deps.checkpointer, () => lease.held());
      const graph = createRoverGraph(context, toolCaller, { checkpointer, modelFor, reportUsage });
      // The context is not persisted by LangGraph: it travels with every call, resumes included. The signal reaches
      // every node and, through the node's config, every model call (and each tool call's wait).
      const config = { configurable: { thread_id: ids.threadId }, context, signal };

      const plan = planStep(request, await graph.graph.getState(config));
      if (plan.kind === 'refuse') {
        await publish(runError(plan.code));
        return 'error';
      }
      const translator = new RunEventTranslator((toolCallId) => toolCaller.hopMs(toolCallIdempotencyKey(ids.threadId, toolCallId)));
      if (plan.kind === 'run') {
        // Rover's invoke_agent span: its model calls, tool calls and specialists nest inside it.
        const stopped = await invokeAgent(ROVER_AGENT_NAME, ids.threadId, async () => {
          const stream = await graph.stream(plan.input, {
            ...config,
            // messages: the model's tokens as they come; updates: finished messages and tool results; tasks: which task
            // runs a specialist (for its attribution); custom: streamOnSuccess notices.
            streamMode: ['messages', 'updates', 'tasks', 'custom'],
            subgraphs: true,
            recursionLimit: this.deps.recursionLimit ?? 40,
          });
          for await (const chunk of stream) {
            for (const event of translator.translate(chunk)) await publish(event);
            if (lease.lost) return true;
          }
          return false;
        });
        if (stopped) return 'stopped';
      }
      if (!lease.held()) return 'stopped';

      const state = await graph.graph.getState(config);
      const pending = pendingInterrupts(state).flatMap((interrupt) => (interrupt.id ? [{ ...interrupt, id: interrupt.id }] : []));
      for (const event of translator.end(pending)) await publish(event);
      const interrupts = toAgentInterrupts(pending);
      if (interrupts.length > 0) {
        const taskOf = new Map(pending.map((interrupt) => [interrupt.id, interrupt.taskId]));
        // So a client that joins while the run waits renders the conversation whole.
        await publish({ type: 'MESSAGES_SNAPSHOT', messages: snapshotMessages(messagesOf(state)) });
        await publish({
          type: 'RUN_FINISHED',
          outcome: {
            type: 'interrupt',
            interrupts: interrupts.map((interrupt) => {
              const taskId = taskOf.get(interrupt.interruptId);
              return toRunInterrupt(interrupt, taskId ? translator.subagentRunIdOfTask(taskId) : undefined);
            }),
          },
        });
        return 'interrupt';
      }
      await publish({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
      return 'success';
    } catch (error) {
      if (error instanceof RunEventPublishError) throw error;
      if (lease.lost) {
        this.logger.log(`Run ${ids.runId} (thread ${ids.threadId}) stopped: its lease was lost (${lease.lost}).`);
        return 'stopped';
      }
      const modelError = modelCallErrorIn(error);
      // The provider's own words stay here, in the log: the user is told the code's sentence.
      if (modelError) this.logger.warn(`Run ${ids.runId} (thread ${ids.threadId}) stopped: ${modelError.message}`);
      else this.logger.error(`Run ${ids.runId} (thread ${ids.threadId}) failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      await publish(runError(safeErrorFor(error, transportSignal)));
      return 'error';
    }
  }
}
