import {
  LOCAL_TOOL_NAMES,
  OUTCOME_UNKNOWN_CODES,
  isToolErrorCode,
  type AgentRunEvent,
  type AgentRunStatus,
  type AgentSpeaker,
  type RunSummary,
  type ToolErrorCode,
} from '@naalya/agent-tools';
import { isWriteTool } from './labels';

export type ToolStatus = 'running' | 'done' | 'refused' | 'failed' | 'unknown';
export type QuestionState = 'pending' | 'sending' | 'answered' | 'expired';

export type ToolResultView = { data?: unknown; scopeContext?: string; auditId?: string; error?: string; code?: ToolErrorCode };
/** While a write's outcome is unknown: whether the Hub is still looking for its audit row, and what it found. */
export type OutcomeCheck = 'checking' | 'confirmed' | 'not-found' | 'unavailable';

export type ChatItem =
  | { kind: 'user'; id: string; runId: string; text: string }
  | { kind: 'message'; id: string; runId: string; speaker: AgentSpeaker; text: string; streaming: boolean }
  | {
      kind: 'tool';
      id: string;
      runId: string;
      name: string;
      event?: string;
      speaker: AgentSpeaker;
      args: Record<string, unknown>;
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
      note?: string;
      /** A confirmation of one tool call: only a yes lets it run. */
      confirm?: true;
    }
  | { kind: 'success'; id: string; runId: string; name: string; label: string; auditId?: string }
  | { kind: 'error'; id: string; runId: string; message: string };

export type RunView = { id: string; status: AgentRunStatus; lastSeq: number };
export type ThreadView = { threadId: string | null; runs: RunView[]; items: ChatItem[] };

/** What the chat reads of a run in GET /agent/threads/:id: its status and its questions, answered or not. */
export type RunSummaryView = Pick<RunSummary, 'id' | 'status' | 'message' | 'interrupts' | 'error' | 'lastSeq'>;

export type ThreadAction =
  | { type: 'reset'; threadId: string | null }
  | { type: 'run-started'; runId: string; message: string }
  | { type: 'event'; runId: string; seq: number; event: AgentRunEvent }
  | { type: 'run-summary'; run: RunSummaryView }
  | { type: 'answer-sending'; interruptId: string; answer: string }
  | { type: 'answer-accepted'; interruptId: string; resumed: boolean }
  | { type: 'answer-refused'; interruptId: string; message: string; state: 'pending' | 'answered' | 'expired' }
  | { type: 'outcome-check'; toolCallId: string; check: OutcomeCheck; auditId?: string }
  | { type: 'stream-failed'; runId: string; message: string };

export const emptyThread = (threadId: string | null = null): ThreadView => ({ threadId, runs: [], items: [] });

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

const applyEvent = (state: ThreadView, runId: string, event: AgentRunEvent): ThreadView => {
  const { items } = state;
  switch (event.type) {
    case 'RUN_STARTED':
      // A step starts after every question of the run was answered: none of them is still waiting.
      return {
        ...state,
        runs: upsertRun(state.runs, runId, { status: 'running' }),
        items: mapItems(
          items,
          (item) => item.kind === 'question' && item.runId === runId && item.state !== 'expired',
          (item) => ({ ...item, state: 'answered' }) as ChatItem,
        ),
      };
    case 'TEXT_MESSAGE_START':
      return { ...state, items: [...items, { kind: 'message', id: event.messageId, runId, speaker: event.speaker, text: '', streaming: true }] };
    case 'TEXT_MESSAGE_CONTENT':
      return {
        ...state,
        items: mapItems(
          items,
          (item) => item.kind === 'message' && item.id === event.messageId,
          (item) => (item.kind === 'message' ? { ...item, text: item.text + event.delta } : item),
        ),
      };
    case 'TEXT_MESSAGE_END':
      return {
        ...state,
        items: mapItems(
          items,
          (item) => item.kind === 'message' && item.id === event.messageId,
          (item) => ({ ...item, streaming: false }) as ChatItem,
        ),
      };
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
            ...(event.event ? { event: event.event } : {}),
            speaker: event.speaker,
            args: event.args,
            status: 'running',
          },
        ],
      };
    case 'TOOL_CALL_END':
      return state;
    case 'TOOL_CALL_RESULT': {
      const result = parseToolResult(event.content);
      return {
        ...state,
        items: mapItems(
          items,
          (item) => item.kind === 'tool' && item.id === event.toolCallId,
          (item) => {
            if (item.kind !== 'tool') return item;
            const status = toolStatusOf(result, isWriteTool(item.name, item.event));
            return {
              ...item,
              status,
              result,
              ...(event.hopMs === undefined ? {} : { hopMs: event.hopMs }),
              ...(status === 'unknown' ? { check: 'checking' as const } : {}),
            };
          },
        ),
      };
    }
    case 'CUSTOM': {
      const label = typeof event.value['label'] === 'string' ? event.value['label'] : event.name;
      const auditId = typeof event.value['auditId'] === 'string' ? event.value['auditId'] : undefined;
      return {
        ...state,
        items: [...items, { kind: 'success', id: `${runId}:${event.name}:${items.length}`, runId, name: event.name, label, ...(auditId ? { auditId } : {}) }],
      };
    }
    case 'RUN_FINISHED': {
      const questions: ChatItem[] = (event.interrupts ?? [])
        .filter((interrupt) => !items.some((item) => item.kind === 'question' && item.id === interrupt.interruptId))
        .map((interrupt) => ({
          kind: 'question',
          id: interrupt.interruptId,
          runId,
          question: interrupt.question,
          askedBy: interrupt.askedBy,
          state: 'pending',
          ...(interrupt.confirmation ? { confirm: true as const } : {}),
        }));
      const status: AgentRunStatus = event.outcome === 'interrupt' ? 'interrupted' : 'finished';
      // A tool call paused on its confirmation has not run yet: it waits for the answer, like ask_user.
      const waiting = new Set((event.interrupts ?? []).flatMap((interrupt) => (interrupt.confirmation && interrupt.toolCallId ? [interrupt.toolCallId] : [])));
      return {
        ...state,
        runs: upsertRun(state.runs, runId, { status }),
        items: settleTools([...items, ...questions], runId, 'finished', waiting),
      };
    }
    case 'RUN_ERROR':
      return {
        ...state,
        runs: upsertRun(state.runs, runId, { status: 'failed' }),
        items: [...settleTools(items, runId, 'failed'), { kind: 'error', id: `${runId}:error:${items.length}`, runId, message: event.message }],
      };
  }
};

/**
 * A step ended with tool calls that never got a result. ask_user waits for its answer (the question shows it). A
 * write that got no answer may still have happened: outcome unknown. A read that got no answer in a failed step failed.
 */
const settleTools = (items: ChatItem[], runId: string, how: 'finished' | 'failed', waiting: ReadonlySet<string> = new Set()): ChatItem[] =>
  mapItems(
    items,
    (item) => item.kind === 'tool' && item.runId === runId && item.status === 'running' && item.name !== LOCAL_TOOL_NAMES.askUser && !waiting.has(item.id),
    (item) => {
      if (item.kind !== 'tool') return item;
      if (isWriteTool(item.name, item.event)) return { ...item, status: 'unknown', check: 'checking' };
      return how === 'failed' ? { ...item, status: 'failed' } : item;
    },
  );

/** The run as the server recorded it: questions answered meanwhile, and questions whose run moved on (expired). */
const applySummary = (state: ThreadView, run: RunSummaryView): ThreadView => {
  let items = state.items;
  if (!items.some((item) => item.kind === 'user' && item.runId === run.id)) {
    items = [...items, { kind: 'user', id: `${run.id}:user`, runId: run.id, text: run.message }];
  }
  for (const interrupt of run.interrupts) {
    const state: QuestionState = interrupt.answered ? 'answered' : run.status === 'interrupted' ? 'pending' : 'expired';
    const known = items.find((item) => item.kind === 'question' && item.id === interrupt.interruptId);
    items = known
      ? mapItems(
          items,
          (item) => item === known,
          (item) => (item.kind === 'question' && item.state !== 'sending' ? { ...item, state } : item),
        )
      : [
          ...items,
          {
            kind: 'question',
            id: interrupt.interruptId,
            runId: run.id,
            question: interrupt.question,
            askedBy: interrupt.askedBy,
            state,
            ...(interrupt.confirm ? { confirm: true as const } : {}),
          },
        ];
  }
  const known = state.runs.find((candidate) => candidate.id === run.id);
  return { ...state, items, runs: upsertRun(state.runs, run.id, { status: run.status, lastSeq: known?.lastSeq ?? 0 }) };
};

/** The chat's view model: every run event, in order, once (by seq), plus what the Hub itself did. */
export const threadReducer = (state: ThreadView, action: ThreadAction): ThreadView => {
  switch (action.type) {
    case 'reset':
      return emptyThread(action.threadId);
    case 'run-started':
      return {
        ...state,
        runs: upsertRun(state.runs, action.runId, { status: 'running' }),
        items: [...state.items, { kind: 'user', id: `${action.runId}:user`, runId: action.runId, text: action.message }],
      };
    case 'event': {
      const run = state.runs.find((candidate) => candidate.id === action.runId);
      if (run && action.seq <= run.lastSeq) return state;
      const next = applyEvent(state, action.runId, action.event);
      return { ...next, runs: upsertRun(next.runs, action.runId, { lastSeq: action.seq }) };
    }
    case 'run-summary':
      return applySummary(state, action.run);
    case 'answer-sending':
      return {
        ...state,
        items: mapItems(
          state.items,
          (item) => item.kind === 'question' && item.id === action.interruptId,
          (item) => ({ ...item, state: 'sending', answer: action.answer }) as ChatItem,
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
          (item) => ({ ...item, state: action.state, note: action.message }) as ChatItem,
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

/** How long a running run may go without any event before the Hub says it may be stalled. */
export const STALL_AFTER_MS = 30_000;

/**
 * The line under the composer: what the user is waiting for. A run that has sent nothing for a while is
 * called stalled rather than shown as working forever; an interrupted run is waiting for the user, not stalled.
 */
export const runHint = (active: RunView | undefined, msSinceLastEvent: number): string | null => {
  if (!active) return null;
  if (active.status === 'interrupted') return 'Answer the question above to continue.';
  if (msSinceLastEvent >= STALL_AFTER_MS) {
    return `No news from Rover for ${Math.round(msSinceLastEvent / 1_000)} s: the run may be stalled. It continues if the platform recovers.`;
  }
  return 'Rover is working…';
};

/** Questions still waiting for an answer. */
export const pendingQuestions = (state: ThreadView) =>
  state.items.filter((item): item is Extract<ChatItem, { kind: 'question' }> => item.kind === 'question' && item.state === 'pending');
