// A small client of the server's conversation API, shared by `npm run demo` and `npm run chat`: log in, open a
// thread, post a message (a run), stream the run's server-sent events (AG-UI events), answer a question (resume), and
// render the events as terminal text, streamed as they come. Plain Node 20: fetch and streams, no dependencies. The speakers' names come from the
// server's GET /agent/map (namesFromMap): the demo imports this file before it builds, so the contract's dist may not
// exist yet.

/** A refused or failed request: `status`, and the server's `code` and sentence (its `message`) when it answered them. */
export class ApiError extends Error {
  constructor(message, { status, code, sentence } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.sentence = sentence;
  }
}

const sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });

/** A question of a run's summary (GET /agent/threads/:id) as the AG-UI interrupt a RUN_FINISHED carries. */
const interruptFromSummary = (interrupt) => ({
  id: interrupt.interruptId,
  reason: interrupt.confirm ? 'confirmation' : 'question',
  message: interrupt.question,
  ...(interrupt.expiresAt ? { expiresAt: interrupt.expiresAt } : {}),
  metadata: { askedBy: interrupt.askedBy },
});

export const createClient = (baseUrl) => {
  let token;
  const request = async (method, path, body, headers = {}, signal) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    }).catch((error) => {
      if (signal?.aborted) throw error;
      throw new ApiError(`${method} ${path} could not reach the server at ${baseUrl}: ${error.cause?.code ?? error.message}`);
    });
    if (!response.ok) {
      const text = await response.text();
      let code;
      let sentence;
      try {
        const body = JSON.parse(text);
        code = body.code;
        if (typeof body.message === 'string') sentence = body.message;
      } catch {
        // not JSON
      }
      throw new ApiError(`${method} ${path} answered ${response.status}: ${text}`, { status: response.status, code, sentence });
    }
    return response;
  };
  const json = async (method, path, body) => (await request(method, path, body)).json();

  const client = {
    async login(email, password) {
      token = (await json('POST', '/auth/login', { email, password })).accessToken;
      return token;
    },
    map: () => json('GET', '/agent/map'),
    createThread: (title) => json('POST', '/agent/threads', title ? { title } : {}),
    /** GET /agent/threads/:id: the thread and its runs (status, questions with their expiry, error and its code). */
    thread: (threadId) => json('GET', `/agent/threads/${threadId}`),
    /** Answers { runId, status: 'running' | 'queued' }; multitaskStrategy 'reject' (the server's default), 'enqueue' or 'interrupt'. */
    startRun: (threadId, message, { multitaskStrategy } = {}) =>
      json('POST', `/agent/threads/${threadId}/runs`, { message, ...(multitaskStrategy ? { multitaskStrategy } : {}) }),
    /** Stops a run (idempotent): { runId, status, cancelled, committedWrites }. */
    cancelRun: (threadId, runId) => json('POST', `/agent/threads/${threadId}/runs/${runId}/cancel`, {}),
    // `edits`: new values for a confirmation's editable arguments; the question is then asked again about the edited call.
    resume: (threadId, interruptId, answer, edits) => json('POST', `/agent/threads/${threadId}/resume`, { interruptId, answer, ...(edits ? { edits } : {}) }),
    /**
     * Streams one step of a run: calls onEvent(event, seq) for each event until the server ends the stream. Without
     * `openEnd`, a stream that ends before the step did is an error; with it, `finish` is then undefined.
     */
    async stream(threadId, runId, afterSeq, onEvent, { timeoutMs = 120_000, signal, openEnd = false } = {}) {
      const response = await request(
        'GET',
        `/agent/threads/${threadId}/runs/${runId}/events`,
        undefined,
        { accept: 'text/event-stream', ...(afterSeq ? { 'last-event-id': String(afterSeq) } : {}) },
        signal,
      );
      const deadline = setTimeout(() => response.body.cancel().catch(() => undefined), timeoutMs);
      let lastSeq = afterSeq;
      let finish;
      let buffer = '';
      const decoder = new TextDecoder();
      try {
        for await (const chunk of response.body) {
          buffer += decoder.decode(chunk, { stream: true });
          let end;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const fields = {};
            for (const line of block.split('\n')) {
              const colon = line.indexOf(':');
              if (colon > 0) fields[line.slice(0, colon)] = (fields[line.slice(0, colon)] ?? '') + line.slice(colon + 1).trim();
            }
            if (fields.data === undefined || fields.id === undefined) continue;
            const event = JSON.parse(fields.data);
            lastSeq = Number(fields.id);
            await onEvent(event, lastSeq);
            if (event.type === 'RUN_FINISHED' || event.type === 'RUN_ERROR') finish = event;
          }
          if (finish) break;
        }
      } finally {
        clearTimeout(deadline);
        await response.body.cancel().catch(() => undefined);
      }
      if (!finish && !openEnd) throw new ApiError(`the event stream of run ${runId} ended before the run step finished`);
      return { lastSeq, finish };
    },
    /**
     * Follows one step of a run to its end, as the server decides it: a queued run is waited for (onStatus('queued')
     * once it is seen), a stream that closes while the run runs is reopened, and a run that ended without an event of
     * its end (the server's own verdict) gets one made from its summary.
     */
    async follow(threadId, runId, afterSeq, onEvent, { signal, onStatus, pollMs = 1_000, timeoutMs } = {}) {
      let seq = afterSeq;
      for (;;) {
        const { lastSeq, finish } = await client.stream(threadId, runId, seq, onEvent, { signal, openEnd: true, ...(timeoutMs ? { timeoutMs } : {}) });
        seq = lastSeq;
        if (finish) return { lastSeq: seq, finish };
        const run = (await client.thread(threadId)).runs.find((candidate) => candidate.id === runId);
        if (!run) throw new ApiError(`run ${runId} is not in thread ${threadId}`);
        onStatus?.(run.status, run);
        if (run.lastSeq > seq) continue;
        if (run.status === 'queued' || run.status === 'running') {
          await sleep(pollMs, signal);
          continue;
        }
        const base = { runId, threadId };
        if (run.status === 'failed') return { lastSeq: seq, finish: { ...base, type: 'RUN_ERROR', message: run.error ?? 'The run failed.', code: run.errorCode ?? 'RUN_FAILED' } };
        if (run.status === 'cancelled') return { lastSeq: seq, finish: { ...base, type: 'RUN_FINISHED', outcome: { type: 'cancelled' } } };
        if (run.status === 'interrupted') {
          const open = run.interrupts.filter((interrupt) => !interrupt.answered && !interrupt.voided).map(interruptFromSummary);
          return { lastSeq: seq, finish: { ...base, type: 'RUN_FINISHED', outcome: { type: 'interrupt', interrupts: open } } };
        }
        return { lastSeq: seq, finish: { ...base, type: 'RUN_FINISHED', outcome: { type: 'success' } } };
      }
    },
  };
  return client;
};

/**
 * A chat answer that edits a confirmation inline: `edit comment = Add a homework task` (an empty value unsets it), for an
 * argument the confirmation lists as editable. Returns the resume's `edits`, or undefined for an ordinary answer.
 */
export const inlineEdits = (answer, interrupt) => {
  const match = /^edit\s+([A-Za-z][A-Za-z0-9]*)\s*=\s*(.*)$/s.exec(answer.trim());
  const editable = interrupt.metadata?.confirmation?.editable;
  if (!match || !editable) return undefined;
  const [, field, value] = match;
  return { [field]: value.trim() === '' ? null : value.trim() };
};

/** What a confirmation with editable arguments tells a person at the chat prompt, or '' for any other question. */
export const editHint = (interrupt) => {
  const editable = interrupt.metadata?.confirmation?.editable;
  if (!editable) return '';
  const fields = Object.keys(editable).length > 0 ? Object.entries(editable).map(([field, value]) => `${field} (now ${JSON.stringify(value)})`) : [];
  const named = fields.length > 0 ? fields.join(', ') : 'an editable argument';
  return `(you may change ${named} before approving: answer "edit <name> = <new value>" and you are asked again)`;
};

/** "expires in 23 h": how long an open question still waits, rounded down, from its expiresAt (as the Hub says it). */
export const expiryText = (expiresAt, now = Date.now()) => {
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

/** What a stop came to: the writes the run committed before it (they stay), one line each; undefined: not known. */
export const stopLines = (writes, indent = '') => {
  if (!writes) return [`${indent}stopped.`];
  if (writes.length === 0) return [`${indent}stopped; nothing had been changed.`];
  return [
    `${indent}stopped; ${writes.length === 1 ? 'this change was made before the stop and stays' : 'these changes were made before the stop and stay'}:`,
    ...writes.map((write) => `${indent}  kept: ${write.event}${write.auditId ? ` auditId ${write.auditId}` : ''} (call ${write.callId})`),
  ];
};

const parse = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

// Arguments on one line: long arrays are counted, not printed.
const showArgs = (args) =>
  JSON.stringify(args, (key, value) => (Array.isArray(value) && value.length > 3 ? `[${value.length} entries]` : value));

/** 1234567 as "1 234 567": digits grouped by thousands with a space, whatever the locale. */
export const groupDigits = (count) => String(count).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');

/**
 * The language model tokens a run has used so far, as the server counted them on its RUN_FINISHED: "(1 234 tokens in,
 * 56 out)"; nothing when it names none, or none were used (the scripted model sends nothing anywhere).
 */
export const usageLine = (usage, indent = '') =>
  usage && usage.inputTokens + usage.outputTokens > 0 ? [`${indent}(${groupDigits(usage.inputTokens)} tokens in, ${groupDigits(usage.outputTokens)} out)`] : [];

/** A run's question or confirmation (an AG-UI interrupt) as a line. */
export const interruptLine = (interrupt, nameOf, indent = '') =>
  `${indent}${nameOf(interrupt.metadata?.askedBy)} ${interrupt.reason === 'confirmation' ? 'asks you to confirm' : 'asks'}: ${interrupt.message}`;

/**
 * Renders run events as terminal text: assistant text as it streams, under the speaker's name (no line break until the
 * message ends), each tool call's name as it starts and its arguments once complete, with its RabbitMQ event; hop time
 * and scope of each result, CUSTOM events with their audit id. Returns a function of (event) => the text to write
 * (possibly a partial line, possibly empty); `pending()` says whether a line is left open.
 */
export const createRenderer = ({ names = {}, indent = '  ' } = {}) => {
  const calls = new Map();
  const texts = new Map();
  const subagents = new Map();
  const nameOf = (speaker) => names[speaker] ?? speaker;
  // The open line, if any: a message's text or a call's name waiting for its arguments.
  let open;
  const close = () => {
    const was = open;
    open = undefined;
    return was ? '\n' : '';
  };
  const lines = (list) => (list.length ? `${close()}${list.join('\n')}\n` : '');
  const render = (event) => {
    switch (event.type) {
      case 'SUBAGENT_STARTED':
        subagents.set(event.subagentRunId, event.name);
        return '';
      case 'TEXT_MESSAGE_START':
        texts.set(event.messageId, event.name);
        return '';
      case 'TEXT_MESSAGE_CONTENT': {
        const speaker = texts.get(event.messageId);
        if (!speaker) return '';
        if (open?.id === event.messageId) return event.delta;
        const text = `${close()}${indent}${nameOf(speaker)}: ${event.delta}`;
        open = { id: event.messageId };
        return text;
      }
      case 'TEXT_MESSAGE_END':
        texts.delete(event.messageId);
        return open?.id === event.messageId ? close() : '';
      case 'TOOL_CALL_START': {
        const call = { ...event, speaker: subagents.get(event.subagentRunId) ?? 'rover', args: '' };
        calls.set(event.toolCallId, call);
        // Handing over and asking read best whole, once the arguments say to whom and what.
        if (call.toolCallName === 'task' || call.toolCallName === 'ask_user') return '';
        const text = `${close()}${indent}${nameOf(call.speaker)} calls ${call.toolCallName}`;
        open = { id: event.toolCallId };
        return text;
      }
      case 'TOOL_CALL_ARGS': {
        const call = calls.get(event.toolCallId);
        if (call) call.args += event.delta;
        return '';
      }
      case 'TOOL_CALL_END': {
        const call = calls.get(event.toolCallId);
        if (!call || call.toolCallName === 'ask_user') return '';
        const args = parse(call.args || '{}');
        if (call.toolCallName === 'task') {
          return lines([`${indent}${nameOf(call.speaker)} hands it to ${nameOf(args?.subagent_type)} (task: "${args?.description}")`]);
        }
        const where = call.metadata?.event ? `RabbitMQ event ${call.metadata.event}` : 'local tool, no hop';
        const rest = `${typeof args === 'string' ? args : showArgs(args)}  [${where}]`;
        // The name is on the open line: the arguments complete it; otherwise (another line came between) it is said again.
        if (open?.id === event.toolCallId) {
          open = undefined;
          return ` ${rest}\n`;
        }
        return lines([`${indent}${nameOf(call.speaker)} calls ${call.toolCallName} ${rest}`]);
      }
      case 'TOOL_CALL_RESULT': {
        const call = calls.get(event.toolCallId);
        if (!call || call.toolCallName === 'task' || call.toolCallName === 'ask_user') return '';
        const result = parse(event.content);
        const hopMs = event.metadata?.hopMs;
        const hop = typeof hopMs === 'number' ? `hop ${hopMs.toFixed(1)} ms` : 'no hop';
        if (result && typeof result === 'object' && typeof result.error === 'string') return lines([`${indent}  <- ${call.toolCallName} refused (${hop}): ${result.error}`]);
        const scope = result && typeof result === 'object' && typeof result.scopeContext === 'string' ? ` scope: "${result.scopeContext}"` : '';
        const audit = result && typeof result === 'object' && result.auditId ? ` auditId ${result.auditId}` : '';
        const size = Array.isArray(result?.data) ? ` ${result.data.length} rows;` : '';
        return lines([`${indent}  <- ${call.toolCallName} answered (${hop});${size}${scope}${audit}`]);
      }
      case 'CUSTOM':
        return lines([`${indent}  event ${event.name}${event.value?.auditId ? ` auditId ${event.value.auditId}` : ''}${event.value?.label ? `: ${event.value.label}` : ''}`]);
      case 'RUN_FINISHED': {
        const { outcome } = event;
        const usage = usageLine(event.metadata?.usage, indent);
        if (outcome?.type === 'cancelled') return lines([...stopLines(event.metadata?.committedWrites, indent), ...usage]);
        const interrupts = outcome?.type === 'interrupt' ? outcome.interrupts : [];
        return lines([...interrupts.map((interrupt) => interruptLine(interrupt, nameOf, indent)), ...usage]) || close();
      }
      case 'RUN_ERROR':
        return lines([`${indent}run failed: ${event.message}`]);
      default:
        return '';
    }
  };
  render.pending = () => open !== undefined;
  return render;
};

/** The speakers' display names from GET /agent/map. */
export const namesFromMap = (map) => Object.fromEntries((map?.roster ?? []).map((entry) => [entry.speaker, entry.name]));
