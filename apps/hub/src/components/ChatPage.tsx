import { useCallback, useEffect, useReducer, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { LOCAL_TOOL_NAMES, SPEAKER_HATS, agentRunEventSchema, type ThreadSummary } from '@naalya/agent-tools';
import { api, session, toolCallKey } from '../lib/api';
import { speakerName } from '../lib/labels';
import { activeRun, emptyThread, pendingQuestions, runHint, threadReducer, type ChatItem } from '../lib/run-view';
import { chatHref, activityHref } from '../lib/route';
import { HttpError, streamRunEvents } from '../lib/sse';
import type { RunModeChoice } from './Header';
import { QuestionForm } from './QuestionForm';
import { ToolCard } from './ToolCard';

type Props = { threadId: string | null; mode: RunModeChoice; onApiError: (error: unknown) => void };

const CHECK_DELAYS_MS = [500, 1_000, 2_000, 4_000, 8_000];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const Message = ({ item }: { item: Extract<ChatItem, { kind: 'message' }> }) => (
  <article className="max-w-3xl rounded-lg border border-slate-200 bg-white px-3 py-2 shadow-sm" aria-label={`Message from ${speakerName(item.speaker)}`} data-testid="agent-message" data-speaker={item.speaker}>
    <p className="text-xs font-semibold text-sky-800">
      {speakerName(item.speaker)}
      {item.speaker === 'rover' ? '' : ` (${SPEAKER_HATS[item.speaker]})`}
    </p>
    <p className="whitespace-pre-wrap">
      {item.text}
      {item.streaming ? <span aria-hidden="true">▍</span> : null}
    </p>
  </article>
);

export const ChatPage = ({ threadId, mode, onApiError }: Props) => {
  const [state, dispatch] = useReducer(threadReducer, threadId, emptyThread);
  const stateRef = useRef(state);
  stateRef.current = state;
  const [threads, setThreads] = useState<ThreadSummary[]>([]);
  const [draft, setDraft] = useState('');
  const [sending, setSending] = useState(false);
  const streams = useRef(new AbortController());
  const answering = useRef(new Set<string>());
  const checking = useRef(new Set<string>());
  // When the stream last said anything, and a clock that ticks while a run is going, so a silent run shows as stalled.
  const lastEventAt = useRef(Date.now());
  const [now, setNow] = useState(() => Date.now());

  const refreshThreads = useCallback(() => {
    api.threads().then(setThreads, onApiError);
  }, [onApiError]);
  useEffect(refreshThreads, [refreshThreads]);

  /** Follows one run's events from `fromSeq`, then re-reads the run so its questions show what the server knows. */
  const follow = useCallback(
    async (thread: string, runId: string, fromSeq: number, signal: AbortSignal) => {
      try {
        await streamRunEvents({
          url: api.eventsUrl(thread, runId),
          token: session.get() ?? '',
          lastEventId: fromSeq,
          signal,
          onEvent: ({ seq, data }) => {
            const parsed = agentRunEventSchema.safeParse(data);
            lastEventAt.current = Date.now();
            if (parsed.success) dispatch({ type: 'event', runId, seq, event: parsed.data });
          },
        });
        if (signal.aborted) return;
        const detail = await api.thread(thread);
        const run = detail.runs.find((candidate) => candidate.id === runId);
        if (run && !signal.aborted) dispatch({ type: 'run-summary', run });
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof HttpError && error.status === 401) onApiError(error);
        else dispatch({ type: 'stream-failed', runId, message: error instanceof Error ? error.message : String(error) });
      }
    },
    [onApiError],
  );

  // Opening a thread (or reloading the page): every run replayed from its first event, the live one followed.
  useEffect(() => {
    streams.current.abort();
    const controller = new AbortController();
    streams.current = controller;
    dispatch({ type: 'reset', threadId });
    if (!threadId) return () => controller.abort();
    (async () => {
      try {
        const detail = await api.thread(threadId);
        for (const run of detail.runs) {
          if (controller.signal.aborted) return;
          dispatch({ type: 'run-summary', run: { ...run, interrupts: [] } });
          await follow(threadId, run.id, 0, controller.signal);
        }
      } catch (error) {
        if (!controller.signal.aborted) onApiError(error);
      }
    })();
    return () => controller.abort();
  }, [threadId, follow, onApiError]);

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

  const send = async (event?: FormEvent) => {
    event?.preventDefault();
    const message = draft.trim();
    if (!message || sending) return;
    setSending(true);
    lastEventAt.current = Date.now();
    try {
      const campusId = mode.mode === 'campus' ? mode.campus.id : undefined;
      if (!threadId) {
        // A new thread: the server makes its id; opening it replays the run from the start.
        const thread = await api.createThread();
        await api.startRun(thread.id, message, campusId);
        setDraft('');
        window.location.hash = chatHref(thread.id);
        refreshThreads();
        return;
      }
      const { runId } = await api.startRun(threadId, message, campusId);
      setDraft('');
      dispatch({ type: 'run-started', runId, message });
      void follow(threadId, runId, 0, streams.current.signal);
    } catch (error) {
      onApiError(error);
    } finally {
      setSending(false);
    }
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey) {
      event.preventDefault();
      void send();
    }
  };

  const answer = async (interruptId: string, text: string) => {
    // One answer per question: a second submit while the first is in flight goes nowhere.
    if (!threadId || answering.current.has(interruptId)) return;
    answering.current.add(interruptId);
    dispatch({ type: 'answer-sending', interruptId, answer: text });
    try {
      const result = await api.resume(threadId, interruptId, text);
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
  const newestQuestion = pendingQuestions(state).at(-1)?.id;

  const active = activeRun(state);
  const busy = sending || Boolean(active);
  const running = active?.status === 'running';
  useEffect(() => {
    if (!running) return undefined;
    const timer = setInterval(() => setNow(Date.now()), 5_000);
    return () => clearInterval(timer);
  }, [running]);
  const hint = runHint(active, now - lastEventAt.current);

  return (
    <div className="flex flex-1">
      <aside className="hidden w-64 shrink-0 border-r border-slate-200 bg-white p-3 md:block" aria-label="Your chats">
        <a href={chatHref()} className="mb-3 block rounded bg-sky-700 px-3 py-1.5 text-center text-sm font-medium text-white hover:bg-sky-800">
          New chat
        </a>
        <ul className="space-y-1 text-sm">
          {threads.map((thread) => (
            <li key={thread.id}>
              <a
                href={chatHref(thread.id)}
                aria-current={thread.id === threadId ? 'page' : undefined}
                className={`block truncate rounded px-2 py-1 ${thread.id === threadId ? 'bg-sky-100 text-sky-900' : 'hover:bg-slate-100'}`}
              >
                {thread.title ?? 'New chat'}
              </a>
            </li>
          ))}
        </ul>
      </aside>
      <section className="flex flex-1 flex-col" aria-label="Conversation">
        <div role="log" aria-live="polite" aria-relevant="additions" className="flex-1 space-y-3 overflow-auto p-4" data-testid="conversation">
          {state.items.length === 0 ? <p className="text-slate-500">Ask Rover something, for example “list departments”.</p> : null}
          {state.items.map((item) => {
            switch (item.kind) {
              case 'user':
                return (
                  <article key={item.id} className="ml-auto w-fit max-w-3xl rounded-lg bg-sky-700 px-3 py-2 text-white" aria-label="Your message" data-testid="user-message">
                    {item.text}
                  </article>
                );
              case 'message':
                return <Message key={item.id} item={item} />;
              case 'tool':
                return item.name === LOCAL_TOOL_NAMES.askUser ? null : <ToolCard key={item.id} item={item} />;
              case 'question':
                return <QuestionForm key={item.id} item={item} focus={item.id === newestQuestion} onAnswer={(id, text) => void answer(id, text)} />;
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
              case 'error':
                return (
                  <p key={item.id} role="alert" className="rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-800">
                    {item.message}
                  </p>
                );
            }
          })}
          <div ref={end} />
        </div>
        <form onSubmit={send} className="border-t border-slate-200 bg-white p-3">
          <label htmlFor="composer" className="block text-sm font-medium">
            Message Rover{mode.mode === 'campus' ? ` (${mode.campus.name} campus)` : ''}
          </label>
          <div className="mt-1 flex gap-2">
            <textarea
              id="composer"
              rows={2}
              value={draft}
              onChange={(event) => setDraft(event.target.value)}
              onKeyDown={onKeyDown}
              aria-describedby="composer-hint"
              className="flex-1 rounded border border-slate-300 px-3 py-2"
              maxLength={4000}
            />
            <button type="submit" disabled={busy || !draft.trim()} className="self-end rounded bg-sky-700 px-4 py-2 font-medium text-white hover:bg-sky-800 disabled:opacity-50">
              Send
            </button>
          </div>
          <p id="composer-hint" role="status" className="mt-1 text-xs text-slate-500">
            {hint ?? 'Enter sends, Shift+Enter starts a new line.'}
          </p>
        </form>
      </section>
    </div>
  );
};
