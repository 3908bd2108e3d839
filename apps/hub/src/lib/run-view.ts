import {
  LOCAL_TOOL_NAMES,
  OUTCOME_UNKNOWN_CODES,
  isToolErrorCode,
  type RunStreamEvent,
  type AgentRunStatus,
  type AgentSpeaker,
  type CommittedWrite,
  type ConfirmationEdit,
  type RunInterrupt,
  type RunSnapshotMessage,
  type RunSummary,
  type ToolErrorCode,
} from '@naalya/agent-tools';
import { isWriteTool } from './labels';

/** `stopped`: a read the run's owner stopped before it answered (a write left so is `unknown`: it may have committed). */
export type ToolStatus = 'running' | 'done' | 'refused' | 'failed' | 'unknown' | 'stopped';
/**
 * `expired`: the run ended or moved on before an answer (or the question's time ran out); `stopped`: its run was
 * stopped. Neither can be answered any more.
 */
export type QuestionState = 'pending' | 'sending' | 'answered' | 'expired' | 'stopped';

export type ToolResultView = { data?: unknown; scopeContext?: string; auditId?: string; error?: string; code?: ToolErrorCode };
/** While a write's outcome is unknown: whether the Hub is still looking for its audit row, and what it found. */
export type OutcomeCheck = 'checking' | 'confirmed' | 'not-found' | 'unavailable';

export type ChatItem =
  | { kind: 'user'; id: string; runId: string; text: string }
  /**
   * `streaming`: its text is still arriving (TEXT_MESSAGE_CONTENT deltas). `live`: it ended while this page watched,
   * so it is announced; a message replayed from the run's history is shown, not announced again.
   */
  | { kind: 'message'; id: string; runId: string; speaker: AgentSpeaker; text: string; streaming: boolean; live: boolean }
  | {
      kind: 'tool';
      id: string;
      runId: string;
      name: string;
      event?: string;
      speaker: AgentSpeaker;
      /** The arguments' JSON text as it streams (TOOL_CALL_ARGS fragments, concatenated). */
      argsText: string;
      /** Whether every fragment arrived (TOOL_CALL_END). */
      argsComplete: boolean;
      /** The parsed arguments, once complete; undefined while streaming, or if the text is not a JSON object. */
      args?: Record<string, unknown>;
      status: ToolStatus;
      result?: ToolResultView;
      hopMs?: number;
      check?: OutcomeCheck;
    }
  | {
      kind: 'question';
      id: string;
      runId: string;
      question: string;
      askedBy: AgentSpeaker;
      state: QuestionState;
      answer?: string;
      /** Why the server refused the answer; `noteField` names the changed argument it refused, if it was one. */
      note?: string;
      noteField?: string;
      /** A confirmation of one tool call: only a yes lets it run. */
      confirm?: true;
      /** Asked while the page watched (not replayed from history): announced, once. */
      live?: true;
      /** When the server stops waiting for the answer (it then ends the run): ISO 8601, from the run's summary. */
      expiresAt?: string;
      /** A confirmation's tool call, which has not run: if the run ends unanswered, it never will. */
      toolCallId?: string;
      /** A confirmation's tool event: which tool's schema its editable arguments are drawn from. */
      event?: string;
      /** The current values of the arguments the person may change before approving (the tool's `confirm.editable`). */
      editable?: Record<string, unknown>;
      /** A confirmation asked again after the person changed it: what they changed. */
      edited?: ConfirmationEdit[];
      /**
       * The question ran out of time unanswered (the server ended its run): the message that started its run, which
       * the person may send again so Rover asks afresh.
       */
      askAgain?: string;
    }
  | { kind: 'success'; id: string; runId: string; name: string; label: string; auditId?: string }
  /** The run's owner stopped it: the writes it had committed stay, and are listed (undefined: not known here). */
  | { kind: 'stopped'; id: string; runId: string; committedWrites?: CommittedWrite[] }
  /**
   * A run that failed (its sentence and code; `sendAgain` holds its message, which the user may send as a new run), or
   * a stream the Hub could not follow (no code, nothing to send again).
   */
  | { kind: 'error'; id: string; runId: string; message: string; code?: string; sendAgain?: string };

/**
 * `historySeq`: the run's events up to it were stored before the page opened the thread (replayed, not announced).
 * `fromStart`: the page read the run from its first event (seq 1), so a MESSAGES_SNAPSHOT tells it nothing new.
 */
export type RunView = { id: string; status: AgentRunStatus; lastSeq: number; historySeq?: number; fromStart?: boolean };
/** `subagents`: who each specialist invocation (SUBAGENT_STARTED's subagentRunId) is, to attribute its tool calls. */
export type ThreadView = { threadId: string | null; runs: RunView[]; items: ChatItem[]; subagents: Record<string, AgentSpeaker> };

/** What the chat reads of a run in GET /agent/threads/:id: its status and its questions, answered or not. */
export type RunSummaryView = Pick<RunSummary, 'id' | 'status' | 'message' | 'interrupts' | 'error'> &
  Partial<Pick<RunSummary, 'errorCode' | 'lastSeq'>>;

export type ThreadAction =
  | { type: 'reset'; threadId: string | null }
  /** POST .../runs answered: `queued` waits for the thread's active run to end. */
  | { type: 'run-started'; runId: string; message: string; status?: 'running' | 'queued' }
  /** POST .../runs/:runId/cancel answered (idempotent: `cancelled` false when the run had already ended). */
  | { type: 'run-cancelled'; runId: string; status: AgentRunStatus; cancelled: boolean; committedWrites: CommittedWrite[] }
  | { type: 'event'; runId: string; seq: number; event: RunStreamEvent }
  /**
   * `afterEvents`: read after the run's events, so its final status stands even where no event showed it. `history`:
   * read as the page opens the thread, so the events stored up to the summary's lastSeq are history (not announced).
   */
  | { type: 'run-summary'; run: RunSummaryView; afterEvents?: boolean; history?: boolean }
  | { type: 'answer-sending'; interruptId: string; answer: string }
  | { type: 'answer-accepted'; interruptId: string; resumed: boolean }
  /** `field`: the changed argument the server refused (a 400 naming it), so the form shows why beside it. */
  | { type: 'answer-refused'; interruptId: string; message: string; state: 'pending' | 'answered' | 'expired'; field?: string }
  | { type: 'outcome-check'; toolCallId: string; check: OutcomeCheck; auditId?: string }
  | { type: 'stream-failed'; runId: string; message: string };

export const emptyThread = (threadId: string | null = null): ThreadView => ({ threadId, runs: [], items: [], subagents: {} });

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The tool's JSON result, as the worker relays it: { data, scopeContext, auditId? } or { error, code }. */
export const parseToolResult = (content: string): ToolResultView => {
  try {
    const parsed: unknown = JSON.parse(content);
    if (!isRecord(parsed)) return { data: parsed };
    if (typeof parsed['error'] === 'string') return { error: parsed['error'], ...(isToolErrorCode(parsed['code']) ? { code: parsed['code'] } : {}) };
    return {
      data: parsed['data'],
      ...(typeof parsed['scopeContext'] === 'string' ? { scopeContext: parsed['scopeContext'] } : {}),
      ...(typeof parsed['auditId'] === 'string' ? { auditId: parsed['auditId'] } : {}),
    };
  } catch {
    // A local tool answers in plain text.
    return { data: content };
  }
};

/** A tool call's streamed arguments, once complete: the object they spell, or undefined if they spell none. */
export const parseToolArgs = (text: string): Record<string, unknown> | undefined => {
  if (!text.trim()) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
};

const OUTCOME_UNKNOWN: ReadonlySet<ToolErrorCode | undefined> = new Set(OUTCOME_UNKNOWN_CODES);
// Broken rather than refused: the masked error, arguments the platform could not read, a lookup of an outcome that
// found none (which may still be running).
const BROKEN: ReadonlySet<ToolErrorCode | undefined> = new Set<ToolErrorCode>(['TOOL_FAILED', 'INVALID_ARGUMENTS', 'NO_RECORDED_OUTCOME']);

/**
 * A result's status, by its code. An error the platform explains (no permission, not yours, not found) is a refusal;
 * a masked error or a transport failure is a failure; a write whose answer was lost is "outcome unknown", never a failure.
 */
export const toolStatusOf = (result: ToolResultView, isWrite: boolean): ToolStatus => {
  if (result.error === undefined) return 'done';
  if (OUTCOME_UNKNOWN.has(result.code)) return isWrite ? 'unknown' : 'failed';
  if (BROKEN.has(result.code)) return 'failed';
  return 'refused';
};

const upsertRun = (runs: RunView[], id: string, patch: Partial<RunView>): RunView[] => {
  const existing = runs.find((run) => run.id === id);
  if (!existing) return [...runs, { id, status: 'running', lastSeq: 0, ...patch }];
  return runs.map((run) => (run.id === id ? { ...run, ...patch } : run));
};

const mapItems = (items: ChatItem[], predicate: (item: ChatItem) => boolean, update: (item: ChatItem) => ChatItem): ChatItem[] =>
  items.map((item) => (predicate(item) ? update(item) : item));

const updateTool = (items: ChatItem[], toolCallId: string, update: (item: Extract<ChatItem, { kind: 'tool' }>) => ChatItem): ChatItem[] =>
  mapItems(
    items,
    (item) => item.kind === 'tool' && item.id === toolCallId,
    (item) => (item.kind === 'tool' ? update(item) : item),
  );

/** A tool's result on its card: its status by its code (a write whose answer was lost is checked in the audit log). */
const withResult = (item: Extract<ChatItem, { kind: 'tool' }>, content: string, hopMs: number | undefined): ChatItem => {
  const result = parseToolResult(content);
  const status = toolStatusOf(result, isWriteTool(item.name, item.event));
  return { ...item, status, result, ...(hopMs === undefined ? {} : { hopMs }), ...(status === 'unknown' ? { check: 'checking' as const } : {}) };
};

/** Who made an event: the specialist its subagentRunId names (SUBAGENT_STARTED), else Rover. */
const speakerOf = (state: ThreadView, subagentRunId: string | undefined): AgentSpeaker =>
  (subagentRunId === undefined ? undefined : state.subagents[subagentRunId]) ?? 'rover';

/** A question or confirmation a run paused on, as the chat shows it. */
const questionOf = (interrupt: RunInterrupt, runId: string, live: boolean): ChatItem => {
  const confirmation = interrupt.reason === 'confirmation' ? interrupt.metadata.confirmation : undefined;
  return {
    kind: 'question',
    id: interrupt.id,
    runId,
    question: interrupt.message,
    askedBy: interrupt.metadata.askedBy,
    state: 'pending',
    ...(live ? { live: true as const } : {}),
    ...(interrupt.reason === 'confirmation' ? { confirm: true as const } : {}),
    ...(interrupt.reason === 'confirmation' && interrupt.toolCallId ? { toolCallId: interrupt.toolCallId } : {}),
    ...(interrupt.expiresAt ? { expiresAt: interrupt.expiresAt } : {}),
    ...(confirmation ? { event: confirmation.event } : {}),
    ...(confirmation?.editable ? { editable: confirmation.editable } : {}),
    ...(confirmation?.edited?.length ? { edited: confirmation.edited } : {}),
  };
};

/**
 * The conversation as a MESSAGES_SNAPSHOT gives it, for a page that joined the run late. A page that read the run from
 * its first event has it all already (and the worker's streamed text ids are not the snapshot's message ids), so it
 * takes nothing from it. Otherwise what the page already shows (by message and tool call id) is left as it is, so
 * nothing shows twice; user messages are skipped, as the page shows each run's message from the run itself.
 */
const applySnapshot = (state: ThreadView, runId: string, messages: RunSnapshotMessage[]): ThreadView => {
  if (state.runs.find((run) => run.id === runId)?.fromStart) return state;
  let items = state.items;
  const known = (kind: ChatItem['kind'], id: string) => items.some((item) => item.kind === kind && item.id === id);
  for (const message of messages) {
    if (message.role === 'assistant') {
      const speaker = message.name ?? 'rover';
      if (message.content && !known('message', message.id)) {
        items = [...items, { kind: 'message', id: message.id, runId, speaker, text: message.content, streaming: false, live: false }];
      }
      for (const call of message.toolCalls ?? []) {
        if (known('tool', call.id)) continue;
        const args = parseToolArgs(call.function.arguments);
        items = [
          ...items,
          {
            kind: 'tool',
            id: call.id,
            runId,
            name: call.function.name,
            speaker,
            argsText: call.function.arguments,
            argsComplete: true,
            ...(args ? { args } : {}),
            status: 'running',
          },
        ];
      }
    } else if (message.role === 'tool') {
      items = mapItems(
        items,
        (item) => item.kind === 'tool' && item.id === message.toolCallId && item.result === undefined,
        (item) => (item.kind === 'tool' ? withResult(item, message.content, undefined) : item),
      );
    }
  }
  return { ...state, items };
};

const applyEvent = (state: ThreadView, runId: string, seq: number, event: RunStreamEvent): ThreadView => {
  const { items } = state;
  switch (event.type) {
    case 'RUN_STARTED':
      // A step starts after every question of the run was answered: none of them is still waiting.
      return {
        ...state,
        runs: upsertRun(state.runs, runId, { status: 'running' }),
        items: mapItems(
          items,
          (item) => item.kind === 'question' && item.runId === runId && item.state !== 'expired' && item.state !== 'stopped',
          (item) => ({ ...item, state: 'answered' }) as ChatItem,
        ),
      };
    case 'SUBAGENT_STARTED':
      return { ...state, subagents: { ...state.subagents, [event.subagentRunId]: event.name } };
    case 'SUBAGENT_FINISHED':
      // Its questions come with the run's RUN_FINISHED; nothing else to show.
      return state;
    case 'TEXT_MESSAGE_START':
      if (items.some((item) => item.kind === 'message' && item.id === event.messageId)) return state;
      return { ...state, items: [...items, { kind: 'message', id: event.messageId, runId, speaker: event.name, text: '', streaming: true, live: false }] };
    case 'TEXT_MESSAGE_CONTENT':
      return {
        ...state,
        items: mapItems(
          items,
          (item) => item.kind === 'message' && item.id === event.messageId && item.streaming,
          (item) => (item.kind === 'message' ? { ...item, text: item.text + event.delta } : item),
        ),
      };
    case 'TEXT_MESSAGE_END': {
      // Announced only if it ended after the page opened the thread: a replayed history is not read out again.
      const historySeq = state.runs.find((run) => run.id === runId)?.historySeq ?? 0;
      return {
        ...state,
        items: mapItems(
          items,
          (item) => item.kind === 'message' && item.id === event.messageId && item.streaming,
          (item) => ({ ...item, streaming: false, live: seq > historySeq }) as ChatItem,
        ),
      };
    }
    case 'TOOL_CALL_START':
      if (items.some((item) => item.kind === 'tool' && item.id === event.toolCallId)) return state;
      return {
        ...state,
        items: [
          ...items,
          {
            kind: 'tool',
            id: event.toolCallId,
            runId,
            name: event.toolCallName,
            ...(event.metadata?.event ? { event: event.metadata.event } : {}),
            speaker: speakerOf(state, event.subagentRunId),
            argsText: '',
            argsComplete: false,
            status: 'running',
          },
        ],
      };
    case 'TOOL_CALL_ARGS':
      return { ...state, items: updateTool(items, event.toolCallId, (item) => (item.argsComplete ? item : { ...item, argsText: item.argsText + event.delta })) };
    case 'TOOL_CALL_END':
      return {
        ...state,
        items: updateTool(items, event.toolCallId, (item) => {
          if (item.argsComplete) return item;
          const args = parseToolArgs(item.argsText);
          return { ...item, argsComplete: true, ...(args ? { args } : {}) };
        }),
      };
    case 'TOOL_CALL_RESULT':
      return { ...state, items: updateTool(items, event.toolCallId, (item) => withResult(item, event.content, event.metadata?.hopMs)) };
    case 'MESSAGES_SNAPSHOT':
      return applySnapshot(state, runId, event.messages);
    case 'CUSTOM': {
      const label = typeof event.value['label'] === 'string' ? event.value['label'] : event.name;
      const auditId = typeof event.value['auditId'] === 'string' ? event.value['auditId'] : undefined;
      return {
        ...state,
        items: [...items, { kind: 'success', id: `${runId}:${event.name}:${items.length}`, runId, name: event.name, label, ...(auditId ? { auditId } : {}) }],
      };
    }
    case 'RUN_FINISHED': {
      const { outcome } = event;
      if (outcome.type === 'cancelled') return stopRun(state, runId, event.metadata?.committedWrites);
      const interrupts = outcome.type === 'interrupt' ? outcome.interrupts : [];
      const questions = interrupts
        .filter((interrupt) => !items.some((item) => item.kind === 'question' && item.id === interrupt.id))
        .map((interrupt) => questionOf(interrupt, runId, seq > (state.runs.find((run) => run.id === runId)?.historySeq ?? 0)));
      const status: AgentRunStatus = outcome.type === 'interrupt' ? 'interrupted' : 'finished';
      // A tool call paused on its confirmation has not run yet: it waits for the answer, like ask_user.
      const waiting = new Set(interrupts.flatMap((interrupt) => (interrupt.reason === 'confirmation' && interrupt.toolCallId ? [interrupt.toolCallId] : [])));
      return {
        ...state,
        runs: upsertRun(state.runs, runId, { status }),
        items: settleTools([...items, ...questions], runId, 'finished', waiting),
      };
    }
    case 'RUN_ERROR':
      return failRun(state, runId, event.message, event.code);
  }
};

/** The message a run was started with, as the chat shows it (its user item). */
const messageOf = (items: ChatItem[], runId: string): string | undefined => {
  const user = items.find((item) => item.kind === 'user' && item.runId === runId);
  return user?.kind === 'user' ? user.text : undefined;
};

const isOpen = (item: ChatItem, runId: string): item is Extract<ChatItem, { kind: 'question' }> =>
  item.kind === 'question' && item.runId === runId && (item.state === 'pending' || item.state === 'sending');

/**
 * A run ended (failed or stopped): its tool calls left without a result are settled, and its questions not yet
 * answered can no longer be. A call still waiting for its confirmation never ran, and now never will: stopped.
 */
const endRun = (items: ChatItem[], runId: string, how: 'failed' | 'stopped', questions: 'expired' | 'stopped'): ChatItem[] => {
  // A question refused as expired before its run ended is unanswered too: its call never ran either.
  const unconfirmed = new Set(
    items.flatMap((item) => (item.kind === 'question' && item.runId === runId && item.state !== 'answered' && item.toolCallId ? [item.toolCallId] : [])),
  );
  return mapItems(
    settleTools(items, runId, how, unconfirmed),
    (item) => isOpen(item, runId) || (item.kind === 'tool' && unconfirmed.has(item.id) && item.status === 'running'),
    (item) => (item.kind === 'question' ? { ...item, state: questions } : item.kind === 'tool' ? { ...item, status: 'stopped' } : item),
  );
};

/**
 * The run failed (the worker's error or the server's): its sentence, once, with its message to send again. A run
 * whose question ran out of time (QUESTION_EXPIRED) is said by the question itself: expired, offering to ask again.
 */
const failRun = (state: ThreadView, runId: string, message: string, code: string | undefined): ThreadView => {
  const id = `${runId}:error`;
  const runs = upsertRun(state.runs, runId, { status: 'failed' });
  const timedOut = (item: ChatItem) => item.kind === 'question' && item.runId === runId && item.state === 'expired';
  if (state.items.some((item) => item.id === id || (timedOut(item) && item.kind === 'question' && item.askAgain !== undefined))) return { ...state, runs };
  const sendAgain = messageOf(state.items, runId);
  // Ended while it waited for the person, not broken: what waited with the question (a specialist's task) stopped.
  const items = endRun(state.items, runId, code === 'QUESTION_EXPIRED' ? 'stopped' : 'failed', 'expired');
  if (code === 'QUESTION_EXPIRED' && sendAgain !== undefined && items.some(timedOut)) {
    // A late answer's refusal said the same in other words (its note): the expiry says it now, with the way on.
    return { ...state, runs, items: mapItems(items, timedOut, (item) => ({ ...item, askAgain: sendAgain, note: undefined }) as ChatItem) };
  }
  return {
    ...state,
    runs,
    items: [...items, { kind: 'error', id, runId, message, ...(code ? { code } : {}), ...(sendAgain ? { sendAgain } : {}) }],
  };
};

/** The run was stopped by its owner: once, with the writes it committed (from its last event or the cancel's answer). */
const stopRun = (state: ThreadView, runId: string, committedWrites: CommittedWrite[] | undefined): ThreadView => {
  const id = `${runId}:stopped`;
  const runs = upsertRun(state.runs, runId, { status: 'cancelled' });
  if (state.items.some((item) => item.id === id)) {
    // Shown already; the writes are filled in if this is the first to know them.
    const items = committedWrites
      ? mapItems(
          state.items,
          (item) => item.id === id && item.kind === 'stopped' && item.committedWrites === undefined,
          (item) => ({ ...item, committedWrites }) as ChatItem,
        )
      : state.items;
    return { ...state, runs, items };
  }
  const items = endRun(state.items, runId, 'stopped', 'stopped');
  return { ...state, runs, items: [...items, { kind: 'stopped', id, runId, ...(committedWrites ? { committedWrites } : {}) }] };
};

/**
 * A step ended with tool calls that never got a result. ask_user waits for its answer (the question shows it). A
 * write that got no answer may still have happened: outcome unknown. A read that got no answer in a failed step failed.
 */
const settleTools = (items: ChatItem[], runId: string, how: 'finished' | 'failed' | 'stopped', waiting: ReadonlySet<string> = new Set()): ChatItem[] =>
  mapItems(
    items,
    (item) => item.kind === 'tool' && item.runId === runId && item.status === 'running' && item.name !== LOCAL_TOOL_NAMES.askUser && !waiting.has(item.id),
    (item) => {
      if (item.kind !== 'tool') return item;
      if (isWriteTool(item.name, item.event)) return { ...item, status: 'unknown', check: 'checking' };
      if (how === 'finished') return item;
      return { ...item, status: how };
    },
  );

/**
 * The run as the server recorded it: its status, questions answered meanwhile, questions whose run moved on or ended
 * (no longer answerable), and when each open question expires. `afterEvents`: the run's events up to now have been
 * read, so an end the events did not show (a failure or a stop the stream missed) is taken from the summary.
 */
const applySummary = (state: ThreadView, run: RunSummaryView, afterEvents: boolean, history: boolean): ThreadView => {
  let items = state.items;
  if (!items.some((item) => item.kind === 'user' && item.runId === run.id)) {
    items = [...items, { kind: 'user', id: `${run.id}:user`, runId: run.id, text: run.message }];
  }
  const open = run.status === 'interrupted' || run.status === 'running';
  for (const interrupt of run.interrupts) {
    const questionState: QuestionState = interrupt.answered
      ? 'answered'
      : interrupt.voided
        ? run.status === 'cancelled'
          ? 'stopped'
          : 'expired'
        : run.status === 'interrupted'
          ? 'pending'
          : 'expired';
    const expiry = interrupt.expiresAt ? { expiresAt: interrupt.expiresAt } : {};
    const known = items.find((item) => item.kind === 'question' && item.id === interrupt.interruptId);
    items = known
      ? mapItems(
          items,
          (item) => item === known,
          (item) => (item.kind !== 'question' ? item : item.state === 'sending' && open ? { ...item, ...expiry } : { ...item, ...expiry, state: questionState }),
        )
      : [
          ...items,
          {
            kind: 'question',
            id: interrupt.interruptId,
            runId: run.id,
            question: interrupt.question,
            askedBy: interrupt.askedBy,
            state: questionState,
            ...(interrupt.confirm ? { confirm: true as const } : {}),
            ...expiry,
          },
        ];
  }
  const known = state.runs.find((candidate) => candidate.id === run.id);
  const next: ThreadView = {
    ...state,
    items,
    runs: upsertRun(state.runs, run.id, { status: run.status, lastSeq: known?.lastSeq ?? 0, ...(history ? { historySeq: run.lastSeq ?? 0 } : {}) }),
  };
  if (afterEvents && run.status === 'failed') return failRun(next, run.id, run.error ?? 'This message could not be answered.', run.errorCode ?? undefined);
  if (afterEvents && run.status === 'cancelled') return stopRun(next, run.id, undefined);
  return next;
};

/** The chat's view model: every run event, in order, once (by seq), plus what the Hub itself did. */
export const threadReducer = (state: ThreadView, action: ThreadAction): ThreadView => {
  switch (action.type) {
    case 'reset':
      return emptyThread(action.threadId);
    case 'run-started':
      return {
        ...state,
        runs: upsertRun(state.runs, action.runId, { status: action.status ?? 'running' }),
        items: [...state.items, { kind: 'user', id: `${action.runId}:user`, runId: action.runId, text: action.message }],
      };
    case 'event': {
      const run = state.runs.find((candidate) => candidate.id === action.runId);
      if (run && action.seq <= run.lastSeq) return state;
      // The first event this page reads of the run says whether it follows the run from its start.
      const first = run === undefined || run.fromStart === undefined ? { fromStart: action.seq === 1 } : {};
      const seen: ThreadView = { ...state, runs: upsertRun(state.runs, action.runId, first) };
      const next = applyEvent(seen, action.runId, action.seq, action.event);
      return { ...next, runs: upsertRun(next.runs, action.runId, { lastSeq: action.seq }) };
    }
    case 'run-summary':
      return applySummary(state, action.run, action.afterEvents === true, action.history === true);
    case 'run-cancelled':
      // Already cancelled (a second Stop, or a stop from another tab) is the same stop; a run that had ended keeps its end.
      if (action.status === 'cancelled') return stopRun(state, action.runId, action.committedWrites);
      return { ...state, runs: upsertRun(state.runs, action.runId, { status: action.status }) };
    case 'answer-sending':
      return {
        ...state,
        items: mapItems(
          state.items,
          (item) => item.kind === 'question' && item.id === action.interruptId,
          (item) => ({ ...item, state: 'sending', answer: action.answer, note: undefined, noteField: undefined }) as ChatItem,
        ),
      };
    case 'answer-accepted': {
      const answered = state.items.find((item) => item.kind === 'question' && item.id === action.interruptId);
      return {
        ...state,
        runs: action.resumed && answered ? upsertRun(state.runs, answered.runId, { status: 'running' }) : state.runs,
        items: mapItems(
          state.items,
          (item) => item === answered,
          (item) => ({ ...item, state: 'answered' }) as ChatItem,
        ),
      };
    }
    case 'answer-refused':
      return {
        ...state,
        items: mapItems(
          state.items,
          (item) => item.kind === 'question' && item.id === action.interruptId,
          (item) => ({ ...item, state: action.state, note: action.message, noteField: action.field }) as ChatItem,
        ),
      };
    case 'outcome-check':
      return {
        ...state,
        items: mapItems(
          state.items,
          (item) => item.kind === 'tool' && item.id === action.toolCallId,
          (item) =>
            item.kind === 'tool'
              ? {
                  ...item,
                  check: action.check,
                  // Found in the audit log: the write happened. Nothing else turns an unknown outcome into a known one.
                  ...(action.check === 'confirmed' ? { status: 'done' as const, result: { ...item.result, auditId: action.auditId } } : {}),
                }
              : item,
        ),
      };
    case 'stream-failed':
      return {
        ...state,
        items: [...state.items, { kind: 'error', id: `${action.runId}:stream:${state.items.length}`, runId: action.runId, message: action.message }],
      };
  }
};

/** The run that holds the thread (running or waiting for an answer), if any. */
export const activeRun = (state: ThreadView): RunView | undefined =>
  [...state.runs].reverse().find((run) => run.status === 'running' || run.status === 'interrupted');

/** Runs waiting for the active one to end, oldest first (they start in this order). */
export const queuedRuns = (state: ThreadView): RunView[] => state.runs.filter((run) => run.status === 'queued');

/** What the Stop button stops: the active run, or else the next queued one. */
export const stoppableRun = (state: ThreadView): RunView | undefined => activeRun(state) ?? queuedRuns(state)[0];

export const QUEUED_TEXT = 'Queued: waiting for the current reply to finish.';

/**
 * The line under the composer: what the user is waiting for, from the run statuses the server reports. A run the
 * server gave up on is failed (its RUN_ERROR says why), so nothing here guesses from silence.
 */
export const runHint = (state: ThreadView): string | null => {
  const active = activeRun(state);
  const queued = queuedRuns(state).length;
  const waiting = queued === 0 ? '' : queued === 1 ? ' 1 message queued: waiting for the current reply to finish.' : ` ${queued} messages queued: waiting for the current reply to finish.`;
  if (active?.status === 'interrupted') return `A question above is waiting for your answer. Answer it, or stop the run.${waiting}`;
  if (active) return `Rover is working…${waiting}`;
  if (queued) return queued === 1 ? 'Your message is queued: waiting for the current reply to finish.' : `${queued} messages queued: waiting for the current reply to finish.`;
  return null;
};

/** "expires in 23 h": how long an open question still waits, rounded down, from its expiresAt. */
export const expiryText = (expiresAt: string, now: number): string => {
  const ms = Date.parse(expiresAt) - now;
  if (Number.isNaN(ms)) return '';
  if (ms <= 0) return 'has expired';
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return 'expires in less than a minute';
  if (minutes < 120) return `expires in ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `expires in ${hours} h`;
  return `expires in ${Math.floor(hours / 24)} days`;
};

type QuestionItem = Extract<ChatItem, { kind: 'question' }>;

/**
 * A question the page still holds open whose time ran out by the page's clock: it takes no answer now (the server
 * refuses a late one), so it shows as expired while the server ends its run.
 */
export const hasLapsed = (item: QuestionItem, now: number): boolean => item.state === 'pending' && item.expiresAt !== undefined && Date.parse(item.expiresAt) <= now;

/** When the soonest open question runs out (ms since the epoch), if one still has time: the page looks again then. */
export const nextExpiry = (state: ThreadView, now: number): number | undefined => {
  const times = pendingQuestions(state)
    .map((item) => (item.expiresAt === undefined ? NaN : Date.parse(item.expiresAt)))
    .filter((time) => time > now);
  return times.length ? Math.min(...times) : undefined;
};

/**
 * How long past a question's expiry the page keeps looking for the server to end its run (the server's sweeper does,
 * within seconds): a bound, so a page never polls forever for a run the server has not got to.
 */
export const EXPIRY_WAIT_MS = 60_000;

/** A run waiting on a question whose time ran out: the server is about to end it (QUESTION_EXPIRED), so look again. */
export const awaitsExpiry = (run: Pick<RunSummaryView, 'status' | 'interrupts'>, now: number): boolean =>
  run.status === 'interrupted' &&
  run.interrupts.some((interrupt) => {
    const at = interrupt.expiresAt === null || interrupt.answered ? NaN : Date.parse(interrupt.expiresAt);
    return at <= now && now - at < EXPIRY_WAIT_MS;
  });

/** The items grouped by run, in the order the runs were made (a queued message's answer follows it, not the one before). */
export const orderedItems = (state: ThreadView): ChatItem[] => {
  const order = new Map(state.runs.map((run, index) => [run.id, index]));
  return state.items
    .map((item, index) => ({ item, index, run: order.get(item.runId) ?? Number.MAX_SAFE_INTEGER }))
    .sort((a, b) => a.run - b.run || a.index - b.index)
    .map(({ item }) => item);
};

/** How many completed messages the live region keeps: each is announced once, as it is added. */
export const ANNOUNCED_MESSAGES = 3;

/**
 * What the live region says: the newest messages that ended while the page watched, whole. A streaming message is not
 * in it (its tokens are never read out one by one), nor one replayed from history.
 */
export const announcements = (state: ThreadView): Extract<ChatItem, { kind: 'message' }>[] =>
  state.items.filter((item): item is Extract<ChatItem, { kind: 'message' }> => item.kind === 'message' && item.live && !item.streaming).slice(-ANNOUNCED_MESSAGES);

/**
 * What the assertive live region says: the newest question asked while the page watched that still waits for an
 * answer (one replayed after a reload is on screen, not read out again).
 */
export const questionAnnouncement = (state: ThreadView): Extract<ChatItem, { kind: 'question' }> | undefined =>
  pendingQuestions(state)
    .filter((item) => item.live)
    .at(-1);

/** Questions still waiting for an answer. */
export const pendingQuestions = (state: ThreadView) =>
  state.items.filter((item): item is Extract<ChatItem, { kind: 'question' }> => item.kind === 'question' && item.state === 'pending');
