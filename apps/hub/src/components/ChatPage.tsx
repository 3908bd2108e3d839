import { useCallback, useEffect, useReducer, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import {
  LOCAL_TOOL_NAMES,
  SPEAKER_HATS,
  runStreamEventSchema,
  type AgentRunStatus,
  type ConversationErrorCode,
  type MultitaskStrategy,
  type RunSummary,
  type ThreadSummary,
} from '@naalya/agent-tools';
import { api, toolCallKey } from '../lib/api';
import { refusedField, type ConfirmationEdits } from '../lib/confirmation-edits';
import { formatDateTime } from '../lib/dates';
import { schoolNameOf, useSchool } from '../lib/school-context';
import { session } from '../lib/session';
import { eventLabel, speakerName } from '../lib/labels';
import {
  QUEUED_TEXT,
  activeRun,
  announcements,
  awaitsExpiry,
  emptyThread,
  hasLapsed,
  nextExpiry,
  questionAnnouncement,
  orderedItems,
  pendingQuestions,
  runHint,
  stoppableRun,
  threadReducer,
  type ChatItem,
  type RunSummaryView,
} from '../lib/run-view';
import { usePageTitle, useUnseen } from '../lib/page-title';
import { chatHref, activityHref } from '../lib/route';
import { HttpError, streamRunEvents } from '../lib/sse';
import type { RunModeChoice } from './Header';
import { QuestionForm } from './QuestionForm';
import { ToolCard } from './ToolCard';

type Props = { threadId: string | null; mode: RunModeChoice; onApiError: (error: unknown) => void };

const CHECK_DELAYS_MS = [500, 1_000, 2_000, 4_000, 8_000];
/** How often a run that has not started yet (queued), or whose stream closed while it runs, is looked at again. */
const WAIT_POLL_MS = 1_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Answers of POST .../runs that leave the message to the user's choice: queue it, or stop the current run and send it. */
const MULTITASK_CONFLICTS: ReadonlySet<ConversationErrorCode | undefined> = new Set<ConversationErrorCode>(['RUN_IN_PROGRESS', 'QUESTION_PENDING', 'RUN_QUEUE_FULL']);
type Conflict = { message: string; code: ConversationErrorCode; sentence: string; fromDraft: boolean };

/** The choice offered when a message meets an active run, in words. */
const conflictText = (conflict: Conflict): string => {
  switch (conflict.code) {
    case 'RUN_IN_PROGRESS':
      return 'Rover is still working on your previous message. Queue this one to send when that reply finishes, or stop that reply and send this one now.';
    case 'QUESTION_PENDING':
      return 'A question above is waiting for your answer. Answer it, or stop that run and send this message now.';
    default:
      return conflict.sentence;
  }
};

const RUN_STATUS_TEXT: Partial<Record<AgentRunStatus, string>> = { queued: QUEUED_TEXT };

/** A run found ended (or waiting for an answer) as the page opens it: what it said so far is history, not news. */
const isHistory = (status: AgentRunStatus): boolean => status !== 'running' && status !== 'queued';

/**
 * A message as it streams. Its text is not live (aria-live off inside the conversation log, busy while it streams):
 * the announcer reads it once, whole.
 */
const Message = ({ item }: { item: Extract<ChatItem, { kind: 'message' }> }) => (
  <article
    className="max-w-3xl rounded-lg border border-slate-200 bg-white px-3 py-2 shadow-sm"
    aria-label={`Message from ${speakerName(item.speaker)}`}
    aria-live="off"
    aria-busy={item.streaming}
    data-testid="agent-message"
    data-speaker={item.speaker}
    data-streaming={item.streaming}
  >
    <p className="text-xs font-semibold text-sky-800">
      {speakerName(item.speaker)}
      {item.speaker === 'rover' ? '' : ` (${SPEAKER_HATS[item.speaker]})`}
    </p>
    <p className="whitespace-pre-wrap" data-testid="message-text">
      {item.text}
      {item.streaming ? <span aria-hidden="true">▍</span> : null}
    </p>
  </article>
);

/** Threads per page of the list: a screenful, then "Load more". */
const THREAD_PAGE = 30;

export const ChatPage = ({ threadId, mode, onApiError }: Props) => {
  const [state, dispatch] = useReducer(threadReducer, threadId, emptyThread);
  const stateRef = useRef(state);
  stateRef.current = state;
  const [threads, setThreads] = useState<ThreadSummary[]>([]);
  const [draft, setDraft] = useState('');
  const [sending, setSending] = useState(false);
  const [stopping, setStopping] = useState(false);
  const [conflict, setConflict] = useState<Conflict | null>(null);
  const streams = useRef(new AbortController());
  const answering = useRef(new Set<string>());
  const checking = useRef(new Set<string>());
  // Runs whose events are being read now, so a catch-up does not open a second stream for one.
  const following = useRef(new Set<string>());
  const composer = useRef<HTMLTextAreaElement | null>(null);
  // The first run of a thread this page just made: opening the thread follows it live, however far it has got.
  const startedHere = useRef<string | null>(null);
  // The clock the questions' expiry is counted from.
  const [now, setNow] = useState(() => Date.now());
  const school = useSchool();
  // What the server says of each run beyond its events: when it was sent, and the school a platform admin's run acts in.
  const [runFacts, setRunFacts] = useState<Record<string, Pick<RunSummary, 'createdAt' | 'targetSchoolId'>>>({});
  const noteRuns = useCallback((runs: readonly RunSummary[]) => {
    setRunFacts((known) => ({ ...known, ...Object.fromEntries(runs.map((run) => [run.id, { createdAt: run.createdAt, targetSchoolId: run.targetSchoolId }])) }));
  }, []);
  /** The school a write of this run was made in, named on a platform administrator's cards (staff have one school). */
  const writtenIn = (runId: string): string | undefined =>
    school.isPlatform && runFacts[runId] ? schoolNameOf(school, runFacts[runId].targetSchoolId) : undefined;

  // The list pages: `nextCursor` is where "Load more" continues; `search` is the query the list shows now.
  const [nextCursor, setNextCursor] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [searchDraft, setSearchDraft] = useState('');
  const [renaming, setRenaming] = useState<string | null>(null);
  // The thread list below the md breakpoint: folded until asked for, folded again once a thread is picked.
  const [threadsOpen, setThreadsOpen] = useState(false);
  const threadsToggle = useRef<HTMLButtonElement | null>(null);
  useEffect(() => setThreadsOpen(false), [threadId]);

  const refreshThreads = useCallback(() => {
    api.threads({ q: search || undefined, limit: THREAD_PAGE }).then(({ threads, next }) => {
      setThreads(threads);
      setNextCursor(next);
    }, onApiError);
  }, [onApiError, search]);
  useEffect(refreshThreads, [refreshThreads]);
  const loadMoreThreads = () => {
    if (!nextCursor) return;
    api.threads({ q: search || undefined, limit: THREAD_PAGE, cursor: nextCursor }).then(({ threads: more, next }) => {
      setThreads((shown) => [...shown, ...more.filter((thread) => !shown.some((seen) => seen.id === thread.id))]);
      setNextCursor(next);
    }, onApiError);
  };
  const [deleting, setDeleting] = useState<string | null>(null);
  // Where the keyboard goes once a rename or a delete's confirmation closes (the control it was on is gone): a selector.
  const refocus = useRef<string | null>(null);
  useEffect(() => {
    if (!refocus.current || renaming || deleting) return;
    document.querySelector<HTMLElement>(refocus.current)?.focus();
    refocus.current = null;
  }, [renaming, deleting, threads]);
  const keepThread = (id: string) => {
    refocus.current = `[data-thread-delete="${id}"]`;
    setDeleting(null);
  };
  const searchBox = useRef<HTMLInputElement | null>(null);
  const deleteThread = (id: string) => {
    api.deleteThread(id).then(() => {
      setThreads((shown) => shown.filter((thread) => thread.id !== id));
      setDeleting(null);
      if (id === threadId) window.location.hash = chatHref();
      // The row and its buttons are gone: the keyboard resumes at the top of the list.
      searchBox.current?.focus();
    }, onApiError);
  };
  const submitRename = (event: FormEvent<HTMLFormElement>, id: string) => {
    event.preventDefault();
    const title = String(new FormData(event.currentTarget).get('title') ?? '').trim();
    if (!title) return;
    api.renameThread(id, title).then((renamed) => {
      setThreads((shown) => shown.map((thread) => (thread.id === id ? { ...thread, title: renamed.title } : thread)));
      refocus.current = `[data-thread-link="${id}"]`;
      setRenaming(null);
    }, onApiError);
  };

  /**
   * Follows one run's events from `fromSeq`, then re-reads the run so its status and questions are what the server
   * knows. A run that has not started (queued) or whose stream closed while it still runs is looked at again until
   * its step ends: the server, not this page, decides when a run is over.
   */
  const follow = useCallback(
    async (thread: string, runId: string, fromSeq: number, signal: AbortSignal) => {
      if (following.current.has(runId)) return;
      following.current.add(runId);
      let seq = fromSeq;
      // A queued run has no events yet (its stream ends at once): only its summary says when it starts.
      let queued = false;
      try {
        for (;;) {
          if (!queued) {
            const outcome = await streamRunEvents({
              url: api.eventsUrl(thread, runId),
              token: session.get() ?? '',
              lastEventId: seq,
              signal,
              onEvent: ({ seq: eventSeq, data }) => {
                const parsed = runStreamEventSchema.safeParse(data);
                if (parsed.success) dispatch({ type: 'event', runId, seq: eventSeq, event: parsed.data });
              },
            });
            seq = outcome.lastEventId;
            if (signal.aborted) return;
          }
          const detail = await api.thread(thread);
          noteRuns(detail.runs);
          const run = detail.runs.find((candidate) => candidate.id === runId);
          if (!run || signal.aborted) return;
          dispatch({ type: 'run-summary', run, afterEvents: run.lastSeq <= seq });
          queued = run.status === 'queued';
          // More events stored: read them at once.
          if (!queued && run.lastSeq > seq) continue;
          // Not started yet, a step going on (a resumed one, or a stream that closed early), or a question whose time
          // ran out (the server is about to end its run): look again shortly.
          if (!queued && run.status !== 'running' && !awaitsExpiry(run, Date.now())) return;
          await sleep(WAIT_POLL_MS);
          if (signal.aborted) return;
        }
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof HttpError && error.status === 401) onApiError(error);
        else dispatch({ type: 'stream-failed', runId, message: error instanceof Error ? error.message : String(error) });
      } finally {
        following.current.delete(runId);
      }
    },
    [onApiError, noteRuns],
  );

  /**
   * Re-reads the thread: a run this page does not know yet (another tab's), or one that moved on while nothing here
   * followed it (a question's run stopped by an interrupting message), is followed from where this page left it.
   */
  const catchUp = useCallback(
    async (thread: string) => {
      const signal = streams.current.signal;
      try {
        const detail = await api.thread(thread);
        noteRuns(detail.runs);
        for (const run of detail.runs) {
          if (signal.aborted) return;
          const known = stateRef.current.runs.find((candidate) => candidate.id === run.id);
          if (following.current.has(run.id)) continue;
          if (!known) dispatch({ type: 'run-summary', run: { ...run, interrupts: [] }, history: isHistory(run.status) });
          if (!known || run.lastSeq > known.lastSeq || run.status !== known.status) void follow(thread, run.id, known?.lastSeq ?? 0, signal);
        }
      } catch (error) {
        if (!signal.aborted) onApiError(error);
      }
    },
    [follow, onApiError, noteRuns],
  );

  // Opening a thread (or reloading the page): every run replayed from its first event, the live ones followed.
  useEffect(() => {
    streams.current.abort();
    const controller = new AbortController();
    streams.current = controller;
    following.current = new Set();
    dispatch({ type: 'reset', threadId });
    setConflict(null);
    if (!threadId) return () => controller.abort();
    (async () => {
      try {
        const detail = await api.thread(threadId);
        noteRuns(detail.runs);
        // In the order they were sent; each run's items then stay with it, whatever order their events arrive in.
        for (const run of detail.runs) {
          const history = run.id !== startedHere.current && isHistory(run.status);
          dispatch({ type: 'run-summary', run: { ...run, interrupts: [] } satisfies RunSummaryView, history });
        }
        for (const run of detail.runs) {
          if (controller.signal.aborted) return;
          const replay = follow(threadId, run.id, 0, controller.signal);
          // A run that ended (or waits for an answer) replays at once; one running or queued is followed meanwhile.
          if (run.status !== 'running' && run.status !== 'queued') await replay;
        }
      } catch (error) {
        if (!controller.signal.aborted) onApiError(error);
      }
    })();
    return () => controller.abort();
  }, [threadId, follow, onApiError, noteRuns]);

  // A write whose answer was lost: look for its audit row (the call's idempotency key), never guess.
  useEffect(() => {
    const thread = state.threadId;
    if (!thread) return;
    for (const item of state.items) {
      if (item.kind !== 'tool' || item.check !== 'checking' || checking.current.has(item.id)) continue;
      checking.current.add(item.id);
      const signal = streams.current.signal;
      (async () => {
        const callId = await toolCallKey(thread, item.id);
        for (const delay of CHECK_DELAYS_MS) {
          await sleep(delay);
          if (signal.aborted) return;
          try {
            const [row] = await api.auditLog({ callId, limit: 1 });
            if (row) return dispatch({ type: 'outcome-check', toolCallId: item.id, check: 'confirmed', auditId: row.id });
          } catch {
            return dispatch({ type: 'outcome-check', toolCallId: item.id, check: 'unavailable' });
          }
        }
        dispatch({ type: 'outcome-check', toolCallId: item.id, check: 'not-found' });
      })();
    }
  }, [state.items, state.threadId]);

  /**
   * Sends a message as a new run. `reject` (the default) is refused with 409 while another run holds the thread: the
   * user is then offered the choice, `enqueue` (it starts when the current reply ends) or `interrupt` (stop that run,
   * then send).
   */
  const submit = async (message: string, strategy: MultitaskStrategy, fromDraft: boolean): Promise<boolean> => {
    if (!message || sending) return false;
    setSending(true);
    setConflict(null);
    try {
      const campusId = mode.mode === 'campus' ? mode.campus.id : undefined;
      if (!threadId) {
        // A new thread: the server makes its id; opening it replays the run from the start.
        const thread = await api.createThread();
        startedHere.current = (await api.startRun(thread.id, message, campusId)).runId;
        if (fromDraft) setDraft('');
        window.location.hash = chatHref(thread.id);
        refreshThreads();
        return true;
      }
      const { runId, status } = await api.startRun(threadId, message, campusId, strategy);
      if (fromDraft) setDraft('');
      // Known before its first event: its cards name their school as they appear (the thread's re-read confirms it).
      setRunFacts((known) => ({ ...known, [runId]: { createdAt: new Date().toISOString(), targetSchoolId: school.acting?.id ?? null } }));
      dispatch({ type: 'run-started', runId, message, status });
      void follow(threadId, runId, 0, streams.current.signal);
      // The run it stopped ends with its own event: show it, and its questions as no longer answerable.
      if (strategy === 'interrupt') void catchUp(threadId);
      return true;
    } catch (error) {
      if (threadId && error instanceof HttpError && (error.status === 409 || error.status === 429) && MULTITASK_CONFLICTS.has(error.code)) {
        // The server says RUN_IN_PROGRESS to any message under `reject`; while a question waits, queueing would be
        // refused too (QUESTION_PENDING), so only stopping is offered.
        const waitsForAnswer = error.code === 'RUN_IN_PROGRESS' && activeRun(stateRef.current)?.status === 'interrupted';
        setConflict({ message, code: waitsForAnswer ? 'QUESTION_PENDING' : (error.code as ConversationErrorCode), sentence: error.message, fromDraft });
        // The run in the way may be another tab's: show it, with its Stop.
        void catchUp(threadId);
      } else {
        onApiError(error);
      }
      return false;
    } finally {
      setSending(false);
    }
  };

  const send = (event?: FormEvent) => {
    event?.preventDefault();
    void submit(draft.trim(), 'reject', true);
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      send();
    }
  };

  /** Stops the active run (or the next queued one): the server cancels it; a write it already committed stays, and is listed. */
  const stop = async () => {
    const target = stoppableRun(stateRef.current);
    if (!threadId || !target || stopping) return;
    setStopping(true);
    try {
      const result = await api.cancelRun(threadId, target.id);
      dispatch({ type: 'run-cancelled', runId: result.runId, status: result.status, cancelled: result.cancelled, committedWrites: result.committedWrites });
      composer.current?.focus();
      // The next queued message starts now: follow it.
      void catchUp(threadId);
    } catch (error) {
      onApiError(error);
    } finally {
      setStopping(false);
    }
  };

  const answer = async (interruptId: string, text: string, edits?: ConfirmationEdits) => {
    // One answer per question: a second submit while the first is in flight goes nowhere.
    if (!threadId || answering.current.has(interruptId)) return;
    answering.current.add(interruptId);
    dispatch({ type: 'answer-sending', interruptId, answer: edits ? `${text}, with your changes` : text });
    try {
      const result = await api.resume(threadId, interruptId, text, edits);
      dispatch({ type: 'answer-accepted', interruptId, resumed: result.resumed });
      if (result.resumed) {
        const run = stateRef.current.runs.find((candidate) => candidate.id === result.runId);
        void follow(threadId, result.runId, run?.lastSeq ?? 0, streams.current.signal);
      }
    } catch (error) {
      answering.current.delete(interruptId);
      if (error instanceof HttpError && error.status === 409) {
        const already = error.code === 'ALREADY_ANSWERED';
        dispatch({ type: 'answer-refused', interruptId, message: error.message, state: already ? 'answered' : 'expired' });
        // Why it moved on (stopped, expired, failed) is the server's to say: its run is read again until it ends.
        const question = stateRef.current.items.find((item) => item.id === interruptId);
        if (question) void follow(threadId, question.runId, stateRef.current.runs.find((run) => run.id === question.runId)?.lastSeq ?? 0, streams.current.signal);
        void catchUp(threadId);
      } else if (error instanceof HttpError && error.status === 400 && edits) {
        // Changes the server refused (its sentence names the argument): said beside the field, the changes kept, the
        // question still open.
        const field = refusedField(error.message, Object.keys(edits));
        dispatch({ type: 'answer-refused', interruptId, message: error.message, state: 'pending', ...(field ? { field } : {}) });
      } else {
        dispatch({ type: 'answer-refused', interruptId, message: error instanceof Error ? error.message : String(error), state: 'pending' });
        onApiError(error);
      }
    }
  };

  // The newest item stays in view as the conversation grows.
  const end = useRef<HTMLDivElement | null>(null);
  const lastItem = state.items.at(-1);
  const lastText = lastItem?.kind === 'message' ? lastItem.text.length : 0;
  useEffect(() => {
    end.current?.scrollIntoView?.({ block: 'end' });
  }, [state.items.length, lastText]);
  const pending = pendingQuestions(state);
  const newestQuestion = pending.at(-1)?.id;
  // An open question's "expires in" stays true while the page stays open, and it shows as expired the moment it is.
  const expiring = pending.some((item) => item.expiresAt !== undefined);
  const soonest = nextExpiry(state, now);
  useEffect(() => {
    if (!expiring) return undefined;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), 30_000);
    const atExpiry = soonest === undefined ? undefined : setTimeout(() => setNow(Date.now()), Math.max(0, soonest - Date.now()) + 50);
    return () => {
      clearInterval(timer);
      clearTimeout(atExpiry);
    };
  }, [expiring, soonest]);
  // A question that ran out of time: its run is read again until the server ends it, which offers to ask again.
  const lapsedRuns = [...new Set(pending.filter((item) => hasLapsed(item, now)).map((item) => item.runId))].join(' ');
  useEffect(() => {
    if (!threadId || !lapsedRuns) return;
    for (const runId of lapsedRuns.split(' ')) {
      void follow(threadId, runId, stateRef.current.runs.find((run) => run.id === runId)?.lastSeq ?? 0, streams.current.signal);
    }
  }, [threadId, lapsedRuns, follow]);
  // Questions already asked again from here: their button goes, so one click sends one message.
  const [askedAgain, setAskedAgain] = useState<ReadonlySet<string>>(new Set());
  const askAgain = async (interruptId: string, message: string) => {
    setAskedAgain((asked) => new Set([...asked, interruptId]));
    if (await submit(message, 'reject', false)) return;
    // Not sent (the thread is busy: the choice is offered; or the server refused): the offer stays.
    setAskedAgain((asked) => new Set([...asked].filter((id) => id !== interruptId)));
  };

  // Announced: each answer as it ends (polite), the newest question that waits for the user (assertive); a tab in the
  // background counts them in its title until it is looked at.
  const announced = announcements(state);
  const asking = questionAnnouncement(state);
  const { unseen, notice } = useUnseen();
  const noticed = useRef(new Set<string>());
  useEffect(() => {
    for (const item of [...announced, ...(asking ? [asking] : [])]) {
      if (noticed.current.has(item.id)) continue;
      noticed.current.add(item.id);
      notice(item.kind === 'question' ? 'question' : 'answer');
    }
  }, [announced, asking, notice]);
  const threadTitle = threadId ? (threads.find((thread) => thread.id === threadId)?.title ?? null) : null;
  usePageTitle(threadTitle ? `${threadTitle} · Chat` : 'Chat', unseen);

  const stoppable = stoppableRun(state);
  const hint = runHint(state);
  const statusOf = new Map(state.runs.map((run) => [run.id, run.status]));

  return (
    <div className="flex min-w-0 flex-1 flex-col md:flex-row">
      {/* Below md the list folds away behind this toggle, so a phone keeps the conversation on screen and the list reachable. */}
      <button
        type="button"
        className="m-2 self-start rounded border border-slate-300 bg-white px-3 py-1.5 text-sm font-medium md:hidden"
        aria-expanded={threadsOpen}
        aria-controls="thread-drawer"
        ref={threadsToggle}
        onClick={() => setThreadsOpen((open) => !open)}
        data-testid="threads-toggle"
      >
        {threadsOpen ? 'Hide chats' : 'Chats'}
      </button>
      <aside
        id="thread-drawer"
        className={`${threadsOpen ? 'block' : 'hidden'} w-full shrink-0 border-b border-slate-200 bg-white p-3 md:block md:w-64 md:border-r md:border-b-0`}
        aria-label="Your chats"
        onKeyDown={(event) => {
          if (event.key === 'Escape' && threadsOpen) {
            setThreadsOpen(false);
            threadsToggle.current?.focus();
          }
        }}
      >
        <a href={chatHref()} onClick={() => setThreadsOpen(false)} className="mb-3 block rounded bg-sky-700 px-3 py-1.5 text-center text-sm font-medium text-white hover:bg-sky-800">
          New chat
        </a>
        <form
          role="search"
          className="mb-3"
          onSubmit={(event) => {
            event.preventDefault();
            setSearch(searchDraft.trim());
          }}
        >
          <label className="block text-xs text-slate-600" htmlFor="thread-search">
            Search chats
          </label>
          <input
            id="thread-search"
            ref={searchBox}
            type="search"
            value={searchDraft}
            onChange={(event) => setSearchDraft(event.target.value)}
            className="w-full rounded border border-slate-300 px-2 py-1 text-sm"
          />
        </form>
        <ul className="space-y-1 text-sm" data-testid="thread-list">
          {threads.map((thread) => (
            <li key={thread.id}>
              {renaming === thread.id ? (
                <form onSubmit={(event) => submitRename(event, thread.id)} className="flex gap-1">
                  <label className="sr-only" htmlFor={`rename-${thread.id}`}>
                    Chat title
                  </label>
                  <input id={`rename-${thread.id}`} name="title" defaultValue={thread.title ?? ''} maxLength={200} className="min-w-0 flex-1 rounded border border-slate-300 px-1" autoFocus />
                  <button type="submit" className="rounded bg-sky-700 px-2 text-white">
                    Save
                  </button>
                </form>
              ) : deleting === thread.id ? (
                <div
                  role="group"
                  aria-label={`Delete ${thread.title ?? 'New chat'}?`}
                  className="rounded border border-red-300 bg-red-50 p-2"
                  onKeyDown={(event) => event.key === 'Escape' && keepThread(thread.id)}
                >
                  <p className="text-xs text-red-900">Delete “{thread.title ?? 'New chat'}”? Its messages go; the changes it made stay in Activity.</p>
                  <div className="mt-1 flex gap-2">
                    <button type="button" autoFocus onClick={() => deleteThread(thread.id)} className="rounded bg-red-700 px-2 py-0.5 text-xs font-medium text-white hover:bg-red-800">
                      Delete
                    </button>
                    <button type="button" onClick={() => keepThread(thread.id)} className="rounded border border-slate-300 px-2 py-0.5 text-xs">
                      Keep
                    </button>
                  </div>
                </div>
              ) : (
                <div className="flex items-center gap-1">
                  <div className="min-w-0 flex-1">
                    <a
                      href={chatHref(thread.id)}
                      aria-current={thread.id === threadId ? 'page' : undefined}
                      data-thread-link={thread.id}
                      onClick={() => setThreadsOpen(false)}
                      className={`block truncate rounded px-2 py-1 ${thread.id === threadId ? 'bg-sky-100 text-sky-900' : 'hover:bg-slate-100'}`}
                    >
                      {thread.title ?? 'New chat'}
                    </a>
                    <time dateTime={thread.updatedAt} className="block px-2 text-xs text-slate-600" data-testid="thread-updated">
                      {formatDateTime(thread.updatedAt, school.timeZone)}
                    </time>
                  </div>
                  <button type="button" onClick={() => setRenaming(thread.id)} aria-label={`Rename ${thread.title ?? 'New chat'}`} className="rounded px-1 text-xs text-slate-700 hover:bg-slate-100">
                    Rename
                  </button>
                  <button type="button" onClick={() => setDeleting(thread.id)} data-thread-delete={thread.id} aria-label={`Delete ${thread.title ?? 'New chat'}`} className="rounded px-1 text-xs text-red-800 hover:bg-red-50">
                    Delete
                  </button>
                </div>
              )}
            </li>
          ))}
        </ul>
        {threads.length === 0 && search ? <p className="mt-2 text-sm text-slate-600">No chats match “{search}”.</p> : null}
        {nextCursor ? (
          <button type="button" onClick={loadMoreThreads} className="mt-2 w-full rounded border border-slate-300 px-2 py-1 text-sm hover:bg-slate-100">
            Load more
          </button>
        ) : null}
      </aside>
      <section className="flex min-w-0 flex-1 flex-col" aria-label="Conversation">
        <div role="log" aria-live="polite" aria-relevant="additions" className="flex-1 space-y-3 overflow-auto p-4" data-testid="conversation">
          {state.items.length === 0 ? <p className="text-slate-500">Ask Rover something, for example “list departments”.</p> : null}
          {orderedItems(state).map((item) => {
            switch (item.kind) {
              case 'user': {
                const status = statusOf.get(item.runId);
                const note = status ? RUN_STATUS_TEXT[status] : undefined;
                return (
                  <article
                    key={item.id}
                    className="ml-auto w-fit max-w-3xl rounded-lg bg-sky-700 px-3 py-2 text-white"
                    aria-label="Your message"
                    data-testid="user-message"
                    data-run-id={item.runId}
                    data-run-status={status}
                  >
                    {item.text}
                    {runFacts[item.runId] ? (
                      <time dateTime={runFacts[item.runId].createdAt} className="mt-1 block text-xs text-sky-100" data-testid="sent-at">
                        {formatDateTime(runFacts[item.runId].createdAt, school.timeZone)}
                      </time>
                    ) : null}
                    {note ? (
                      <p className="mt-1 text-xs text-sky-100" data-testid="run-state">
                        {note}
                      </p>
                    ) : null}
                  </article>
                );
              }
              case 'message':
                return <Message key={item.id} item={item} />;
              case 'tool':
                return item.name === LOCAL_TOOL_NAMES.askUser ? null : <ToolCard key={item.id} item={item} writtenIn={writtenIn(item.runId)} />;
              case 'question':
                return (
                  <QuestionForm
                    key={item.id}
                    item={item}
                    now={now}
                    writtenIn={item.confirm ? writtenIn(item.runId) : undefined}
                    focus={item.id === newestQuestion}
                    onAnswer={(id, text, edits) => void answer(id, text, edits)}
                    onAskAgain={askedAgain.has(item.id) || sending ? undefined : (message) => void askAgain(item.id, message)}
                  />
                );
              case 'success':
                return (
                  <p key={item.id} className="rounded border border-emerald-300 bg-emerald-50 px-3 py-2 text-sm text-emerald-900" data-testid="success-event">
                    ✓ {item.label}
                    {item.auditId ? (
                      <>
                        {' · '}
                        <a className="underline" href={activityHref(item.auditId)}>
                          View the audit row
                        </a>
                      </>
                    ) : null}
                  </p>
                );
              case 'stopped':
                return (
                  <div key={item.id} className="rounded border border-slate-300 bg-slate-50 px-3 py-2 text-sm text-slate-800" data-testid="run-stopped" data-run-id={item.runId}>
                    <p className="font-medium">
                      Stopped.
                      {item.committedWrites?.length === 0 ? ' Nothing had been changed.' : null}
                    </p>
                    {item.committedWrites?.length ? (
                      <>
                        <p>{item.committedWrites.length === 1 ? 'This change was made before the stop, and stays:' : 'These changes were made before the stop, and stay:'}</p>
                        <ul className="ml-5 list-disc" data-testid="committed-writes">
                          {item.committedWrites.map((write) => (
                            <li key={write.callId}>
                              {eventLabel(write.event)}
                              {write.auditId ? (
                                <>
                                  {' · '}
                                  <a className="underline" href={activityHref(write.auditId)}>
                                    View the audit row
                                  </a>
                                </>
                              ) : null}
                            </li>
                          ))}
                        </ul>
                      </>
                    ) : null}
                  </div>
                );
              case 'error':
                return (
                  <div
                    key={item.id}
                    role="alert"
                    className="flex flex-wrap items-center gap-2 rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-800"
                    data-testid="run-error"
                    data-run-id={item.runId}
                    data-code={item.code}
                  >
                    <p className="flex-1">{item.message}</p>
                    {item.sendAgain !== undefined ? (
                      <button
                        type="button"
                        className="rounded border border-red-700 px-3 py-1 font-medium text-red-800 hover:bg-red-100 disabled:opacity-50"
                        disabled={sending}
                        title={`Send "${item.sendAgain}" again`}
                        onClick={() => void submit(item.sendAgain ?? '', 'reject', false)}
                      >
                        Send again
                      </button>
                    ) : null}
                  </div>
                );
            }
          })}
          <div ref={end} />
        </div>
        {/* Each message once, whole, as it ends: additions are read, the oldest dropped silently. */}
        <div className="sr-only" aria-live="polite" aria-atomic="false" aria-relevant="additions" data-testid="announcer">
          {announced.map((item) => (
            <p key={item.id}>
              {speakerName(item.speaker)}: {item.text}
            </p>
          ))}
        </div>
        {/* A question holds the run until it is answered: said at once, and said again only for a new question. */}
        <div className="sr-only" aria-live="assertive" aria-atomic="true" data-testid="question-announcer">
          {asking ? (
            <p key={asking.id}>
              {speakerName(asking.askedBy)} {asking.confirm ? 'asks you to confirm' : 'asks'}: {asking.question}
            </p>
          ) : null}
        </div>
        <form onSubmit={send} className="border-t border-slate-200 bg-white p-3">
          {conflict ? (
            <div role="group" aria-labelledby="multitask-choice-text" className="mb-2 rounded border border-amber-300 bg-amber-50 p-2 text-sm" data-testid="multitask-choice" data-code={conflict.code}>
              <p id="multitask-choice-text">{conflictText(conflict)}</p>
              <div className="mt-2 flex flex-wrap gap-2">
                {conflict.code === 'RUN_IN_PROGRESS' ? (
                  <button
                    type="button"
                    autoFocus
                    disabled={sending}
                    className="rounded bg-sky-700 px-3 py-1 font-medium text-white hover:bg-sky-800 disabled:opacity-50"
                    onClick={() => void submit(conflict.message, 'enqueue', conflict.fromDraft)}
                  >
                    Queue it
                  </button>
                ) : null}
                <button
                  type="button"
                  autoFocus={conflict.code !== 'RUN_IN_PROGRESS'}
                  disabled={sending}
                  className="rounded border border-amber-700 px-3 py-1 font-medium hover:bg-amber-100 disabled:opacity-50"
                  onClick={() => void submit(conflict.message, 'interrupt', conflict.fromDraft)}
                >
                  Stop the current run and send
                </button>
                <button
                  type="button"
                  className="rounded px-3 py-1 underline"
                  onClick={() => {
                    setConflict(null);
                    composer.current?.focus();
                  }}
                >
                  Keep editing
                </button>
              </div>
            </div>
          ) : null}
          <label htmlFor="composer" className="block text-sm font-medium">
            Message Rover{mode.mode === 'campus' ? ` (${mode.campus.name} campus)` : ''}
          </label>
          <div className="mt-1 flex gap-2">
            <textarea
              id="composer"
              ref={composer}
              rows={2}
              value={draft}
              onChange={(event) => {
                setDraft(event.target.value);
                // The choice was about the message as it was sent; an edited one is sent afresh.
                if (conflict?.fromDraft) setConflict(null);
              }}
              onKeyDown={onKeyDown}
              aria-describedby="composer-hint"
              className="min-w-0 flex-1 rounded border border-slate-300 px-3 py-2"
              maxLength={4000}
            />
            <button type="submit" disabled={sending || !draft.trim()} className="self-end rounded bg-sky-700 px-4 py-2 font-medium text-white hover:bg-sky-800 disabled:opacity-50">
              Send
            </button>
            {stoppable ? (
              // aria-disabled, not disabled, while the stop is in flight: the button keeps the keyboard focus.
              <button
                type="button"
                onClick={() => void stop()}
                aria-disabled={stopping}
                aria-label={stopping ? 'Stopping the current run…' : stoppable.status === 'queued' ? 'Stop the queued message' : 'Stop the current run'}
                data-testid="stop-run"
                className="self-end rounded border border-red-700 px-4 py-2 font-medium text-red-800 hover:bg-red-50 aria-disabled:cursor-wait aria-disabled:opacity-50"
              >
                {stopping ? 'Stopping…' : 'Stop'}
              </button>
            ) : null}
          </div>
          <p id="composer-hint" role="status" className="mt-1 text-xs text-slate-500" data-testid="composer-hint">
            {hint ?? 'Enter sends, Shift+Enter starts a new line.'}
          </p>
        </form>
      </section>
    </div>
  );
};
