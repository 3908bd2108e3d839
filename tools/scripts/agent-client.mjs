// A small client of the server's conversation API, shared by `npm run demo` and `npm run chat`: log in, open a
// thread, post a message (a run), stream the run's server-sent events, answer a question (resume), and render
// each event as a line of text. Plain Node 20: fetch and streams, no dependencies. The speakers' names come from the
// server's GET /agent/map (namesFromMap): the demo imports this file before it builds, so the contract's dist may not
// exist yet.

export class ApiError extends Error {}

export const createClient = (baseUrl) => {
  let token;
  const request = async (method, path, body, headers = {}) => {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).catch((error) => {
      throw new ApiError(`${method} ${path} could not reach the server at ${baseUrl}: ${error.cause?.code ?? error.message}`);
    });
    if (!response.ok) throw new ApiError(`${method} ${path} answered ${response.status}: ${await response.text()}`);
    return response;
  };
  const json = async (method, path, body) => (await request(method, path, body)).json();

  return {
    async login(email, password) {
      token = (await json('POST', '/auth/login', { email, password })).accessToken;
      return token;
    },
    map: () => json('GET', '/agent/map'),
    createThread: (title) => json('POST', '/agent/threads', title ? { title } : {}),
    startRun: (threadId, message) => json('POST', `/agent/threads/${threadId}/runs`, { message }),
    resume: (threadId, interruptId, answer) => json('POST', `/agent/threads/${threadId}/resume`, { interruptId, answer }),
    /** Streams one step of a run: calls onEvent(event, seq) for each event until the server ends the stream. */
    async stream(threadId, runId, afterSeq, onEvent, { timeoutMs = 120_000 } = {}) {
      const response = await request('GET', `/agent/threads/${threadId}/runs/${runId}/events`, undefined, {
        accept: 'text/event-stream',
        ...(afterSeq ? { 'last-event-id': String(afterSeq) } : {}),
      });
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
      if (!finish) throw new ApiError(`the event stream of run ${runId} ended before the run step finished`);
      return { lastSeq, finish };
    },
  };
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

/**
 * Renders run events as lines: assistant text under the speaker's name, each tool call with its RabbitMQ
 * event, hop time and scope, CUSTOM events with their audit id. Returns a function of (event) => lines.
 */
export const createRenderer = ({ names = {}, indent = '  ' } = {}) => {
  const calls = new Map();
  const texts = new Map();
  const nameOf = (speaker) => names[speaker] ?? speaker;
  return (event) => {
    switch (event.type) {
      case 'RUN_STARTED':
        return [];
      case 'TEXT_MESSAGE_START':
        texts.set(event.messageId, { speaker: event.speaker, text: '' });
        return [];
      case 'TEXT_MESSAGE_CONTENT': {
        const message = texts.get(event.messageId);
        if (message) message.text += event.delta;
        return [];
      }
      case 'TEXT_MESSAGE_END': {
        const message = texts.get(event.messageId);
        texts.delete(event.messageId);
        return message?.text ? [`${indent}${nameOf(message.speaker)}: ${message.text}`] : [];
      }
      case 'TOOL_CALL_START': {
        calls.set(event.toolCallId, event);
        const who = nameOf(event.speaker);
        if (event.toolCallName === 'task') return [`${indent}${who} hands it to ${nameOf(event.args?.subagent_type)} (task: "${event.args?.description}")`];
        if (event.toolCallName === 'ask_user') return [];
        const where = event.event ? `RabbitMQ event ${event.event}` : 'local tool, no hop';
        return [`${indent}${who} calls ${event.toolCallName} ${showArgs(event.args ?? {})}  [${where}]`];
      }
      case 'TOOL_CALL_END':
        return [];
      case 'TOOL_CALL_RESULT': {
        const call = calls.get(event.toolCallId);
        if (!call || call.toolCallName === 'task' || call.toolCallName === 'ask_user') return [];
        const result = parse(event.content);
        const hop = typeof event.hopMs === 'number' ? `hop ${event.hopMs.toFixed(1)} ms` : 'no hop';
        if (result && typeof result === 'object' && typeof result.error === 'string') return [`${indent}  <- ${call.toolCallName} refused (${hop}): ${result.error}`];
        const scope = result && typeof result === 'object' && typeof result.scopeContext === 'string' ? ` scope: "${result.scopeContext}"` : '';
        const audit = result && typeof result === 'object' && result.auditId ? ` auditId ${result.auditId}` : '';
        const size = Array.isArray(result?.data) ? ` ${result.data.length} rows;` : '';
        return [`${indent}  <- ${call.toolCallName} answered (${hop});${size}${scope}${audit}`];
      }
      case 'CUSTOM':
        return [`${indent}  event ${event.name}${event.value?.auditId ? ` auditId ${event.value.auditId}` : ''}${event.value?.label ? `: ${event.value.label}` : ''}`];
      case 'RUN_FINISHED':
        return (event.interrupts ?? []).map((interrupt) => `${indent}${nameOf(interrupt.askedBy)} asks: ${interrupt.question}`);
      case 'RUN_ERROR':
        return [`${indent}run failed: ${event.message}`];
      default:
        return [];
    }
  };
};

/** The speakers' display names from GET /agent/map. */
export const namesFromMap = (map) => Object.fromEntries((map?.roster ?? []).map((entry) => [entry.speaker, entry.name]));
