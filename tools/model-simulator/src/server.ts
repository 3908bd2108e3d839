import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { anthropicWire } from './anthropic.js';
import { openAiWire } from './openai.js';
import { DEFAULT_CHUNKS, estimateTokens, parseScript, parseTurn, replyOf, ScriptError, type Script, type ScriptInput, type Turn, type TurnInput } from './script.js';
import type { ReadRequest, ReplyPlan, Wire } from './wire.js';

/** The HTTP plumbing: routes, bounded bodies, the request record and the script cursor. What a turn looks like on the wire is in openai.ts / anthropic.ts. */

export interface RecordedRequest {
  /** Which API was called; only model calls are recorded, not the control routes. */
  api: Wire['name'];
  method: string;
  path: string;
  /** Request headers, without the credentials (`authorization`, `x-api-key`). */
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body: the messages, tools and options the model was sent. */
  body: unknown;
  /** Index of the turn that answered (the script's, or the responder's count of answers), or null when none did. */
  turn: number | null;
  /** The token counts the reply reported, for a turn that answered (not an error, a 429 or a dropped connection). */
  usage?: { inputTokens: number; outputTokens: number };
}

/** A model request as a responder reads it: the API it came in on and its parts in that API's own shape. */
export interface ResponderRequest {
  api: Wire['name'];
  model: string;
  /** OpenAI chat messages (system messages included) or Anthropic messages (tool results as user content blocks). */
  messages: unknown[];
  /** The tools offered: OpenAI `{ type: 'function', function: { name, description, parameters } }`, Anthropic `{ name, description, input_schema }`. */
  tools: unknown[];
  /** Anthropic's separate system prompt (a string or text blocks); absent on OpenAI. */
  system?: unknown;
}

/** Answers each request with a turn computed from it, instead of the next turn of a script. */
export type Responder = (request: ResponderRequest) => TurnInput | Promise<TurnInput>;

export interface ModelSimulatorOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  script?: ScriptInput;
  /** Answers every request from the request itself (a model policy); while set, the script is not read. */
  responder?: Responder;
  /** Largest request body accepted, in bytes (default 4 MiB); a larger one is answered 413. */
  maxBodyBytes?: number;
  /** How many requests the record keeps (default 10 000); the oldest are dropped first. */
  maxRecorded?: number;
}

export interface ModelSimulator {
  /** `http://host:port`, without a trailing slash: OpenAI clients take `${url}/v1`, Anthropic clients take `url`. */
  url: string;
  requests(): RecordedRequest[];
  /** Validates and loads a script, starting again at its first turn; a bad script throws a ScriptError. */
  setScript(script: ScriptInput): void;
  /** Answers every request with this responder from now on; undefined goes back to the script. */
  setResponder(responder: Responder | undefined): void;
  /** Forgets the script and the recorded requests (a responder stays). */
  reset(): void;
  close(): Promise<void>;
}

const MODEL_ROUTES: Record<string, Wire> = { '/v1/chat/completions': openAiWire, '/v1/messages': anthropicWire };
const SECRET_HEADERS = new Set(['authorization', 'x-api-key']);
/** Bounds on how long a client may take to send its headers and its whole request. */
const HEADERS_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 30_000;

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of req as AsyncIterable<Buffer>) {
    size += part.length;
    if (size > maxBytes) throw new BodyTooLarge(`request body larger than ${maxBytes} bytes`);
    parts.push(part);
  }
  return Buffer.concat(parts).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const write = (res: ServerResponse, frame: string) => new Promise<void>((resolve) => res.write(frame, () => resolve()));

export async function startModelSimulator(options: ModelSimulatorOptions = {}): Promise<ModelSimulator> {
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024;
  const maxRecorded = options.maxRecorded ?? 10_000;
  let script: Script = options.script ? parseScript(options.script) : { turns: [] };
  let cursor = 0;
  let responder = options.responder;
  let answered = 0;
  let serial = 0;
  let recorded: RecordedRequest[] = [];
  // Aborts every pending delay when the simulator closes, so close() never waits on a scripted pause.
  const closing = new AbortController();

  const setScript = (input: ScriptInput) => {
    script = parseScript(input);
    cursor = 0;
  };

  // The script's next turn, or the responder's answer to this request; null when the script has run out.
  async function nextTurn(wire: Wire, request: ReadRequest): Promise<{ index: number; turn: Turn } | { index: null; problem: string }> {
    if (!responder) {
      if (cursor >= script.turns.length) return { index: null, problem: `model simulator: the script has no turn left (it had ${script.turns.length})` };
      const index = cursor++;
      return { index, turn: script.turns[index] as Turn };
    }
    const { messages, tools, system, model } = request;
    try {
      const turn = parseTurn(await responder({ api: wire.name, model, messages, tools, ...(system !== undefined ? { system } : {}) }));
      return { index: answered++, turn };
    } catch (error) {
      return { index: null, problem: `model simulator: the responder failed: ${(error as Error).message}` };
    }
  }

  async function answer(wire: Wire, req: IncomingMessage, res: ServerResponse, body: unknown, rawLength: number): Promise<void> {
    const request = wire.readRequest(body);
    const next = await nextTurn(wire, request);
    const record: RecordedRequest = {
      api: wire.name,
      method: req.method ?? 'POST',
      path: req.url ?? '',
      headers: Object.fromEntries(Object.entries(req.headers).filter(([name]) => !SECRET_HEADERS.has(name))),
      body,
      turn: next.index,
    };
    recorded.push(record);
    if (recorded.length > maxRecorded) recorded = recorded.slice(-maxRecorded);
    // A 400 is not retried by clients, so a test that runs past its script (or a responder that fails) fails at once with this message.
    if (next.index === null) return sendJson(res, 400, wire.error(400, next.problem));
    const { index, turn } = next;

    if (turn.kind === 'rate_limit') {
      return sendJson(res, 429, wire.error(429, 'model simulator: rate limited'), { 'retry-after': String(turn.retryAfterSeconds) });
    }
    if (turn.kind === 'server_error') return sendJson(res, turn.status, wire.error(turn.status, turn.message));
    if (turn.kind === 'unknown_tool' && request.offeredTools.includes(turn.name)) {
      return sendJson(res, 400, wire.error(400, `model simulator: turn ${index} calls "${turn.name}" as a tool not offered, but the request offered it`));
    }
    // The request lives until the client goes away or the simulator closes; a delay ends with whichever comes first.
    const gone = AbortSignal.any([closing.signal, abortedWhenClosed(res)]);
    const pause = (ms: number | undefined) => (ms ? sleep(ms, undefined, { signal: gone }) : Promise.resolve());

    if (turn.kind === 'drop') {
      if (!request.stream) return void req.socket.destroy();
      const plan: ReplyPlan = { reply: { kind: 'text', text: turn.text }, usage: { inputTokens: 1, outputTokens: 1 }, model: request.model, serial: ++serial, chunks: turn.chunks ?? DEFAULT_CHUNKS };
      const { frames, contentEnd } = wire.stream(plan, false);
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const frame of frames.slice(0, contentEnd)) await write(res, frame);
      return void res.destroy();
    }

    const reply = replyOf(turn);
    const replyChars = reply.kind === 'tool_calls' ? reply.calls.reduce((sum, call) => sum + call.name.length + call.argumentsJson.length, 0) : reply.text.length;
    const plan: ReplyPlan = {
      reply,
      usage: { inputTokens: turn.usage?.inputTokens ?? estimateTokens(rawLength), outputTokens: turn.usage?.outputTokens ?? estimateTokens(replyChars) },
      model: request.model,
      serial: ++serial,
      chunks: turn.chunks ?? DEFAULT_CHUNKS,
    };
    record.usage = plan.usage;
    if (!request.stream) {
      await pause(turn.delayMs);
      return sendJson(res, 200, wire.json(plan));
    }
    // Headers at once, then the pause: a model that accepted the request and is slow to its first token.
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.flushHeaders();
    await pause(turn.delayMs);
    for (const frame of wire.stream(plan, request.wantsStreamUsage).frames) await write(res, frame);
    res.end();
  }

  async function control(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    if (req.method === 'GET' && path === '/_simulator/requests') return sendJson(res, 200, recorded);
    if (req.method === 'POST' && path === '/_simulator/reset') {
      script = { turns: [] };
      cursor = 0;
      answered = 0;
      recorded = [];
      return sendJson(res, 200, { ok: true });
    }
    if (req.method === 'POST' && path === '/_simulator/script') {
      try {
        setScript(JSON.parse(await readBody(req, maxBodyBytes)));
        return sendJson(res, 200, { ok: true, turns: script.turns.length });
      } catch (error) {
        if (error instanceof BodyTooLarge) throw error;
        const message = error instanceof ScriptError ? error.message : `invalid model simulator script: the body is not JSON (${(error as Error).message})`;
        return sendJson(res, 400, { error: message });
      }
    }
    return sendJson(res, 404, { error: `model simulator: no route ${req.method} ${path}` });
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://simulator').pathname;
    const wire = MODEL_ROUTES[path];
    const handle = async () => {
      if (!wire) return control(req, res, path);
      if (req.method !== 'POST') return sendJson(res, 405, wire.error(405, `model simulator: ${path} takes POST`));
      const raw = await readBody(req, maxBodyBytes);
      let body: unknown;
      try {
        body = JSON.parse(raw);
      } catch {
        return sendJson(res, 400, wire.error(400, 'model simulator: the request body is not JSON'));
      }
      return answer(wire, req, res, body, raw.length);
    };
    handle().catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (error instanceof BodyTooLarge) {
        // Close after answering: the rest of the oversized body is not read.
        res.setHeader('connection', 'close');
        return sendJson(res, 413, { error: `model simulator: ${error.message}` });
      }
      if (closing.signal.aborted || res.destroyed) return;
      sendJson(res, 500, { error: `model simulator: ${(error as Error).message}` });
    });
  });
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;

  return {
    url: `http://${host}:${port}`,
    requests: () => structuredClone(recorded),
    setScript,
    setResponder: (next) => {
      responder = next;
      answered = 0;
    },
    reset: () => {
      script = { turns: [] };
      cursor = 0;
      answered = 0;
      recorded = [];
    },
    close: async () => {
      closing.abort();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function abortedWhenClosed(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => controller.abort());
  return controller.signal;
}
