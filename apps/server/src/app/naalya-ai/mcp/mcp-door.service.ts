import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { HttpException, Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest, isJSONRPCRequest, type JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { HTTP_ERROR_SENTENCES } from '@naalya/access';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { AgentThreadsService } from '../threads/agent-threads.service.js';
import { ToolCallQuota, secondsLeftInWindow } from '../tools/tool-call-quota.js';
import { createMcpSessionServer } from './mcp-session.js';
import { McpToolPublisher } from './mcp-tool-publisher.service.js';
import { McpTokensService, mcpTokenHash, type McpTokenHolder } from './mcp-tokens.service.js';

/** RFC 9728: where a resource at `https://host/path` publishes its metadata. */
export const protectedResourceMetadataUrl = (resource: string): string => {
  const url = new URL(resource);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname}`;
};

/**
 * When a session opened now must end: at its token's expiry or its dispatch token's, whichever comes first. The dispatch
 * token is not renewed: a client whose session ended gets 404 and initialises a new one (the protocol's own recovery),
 * which mints a fresh run and token through the one path every run takes.
 */
export const mcpSessionDeadline = (tokenExpiresAt: Date, dispatchTokenTtlSeconds: number, now: number): number =>
  Math.min(tokenExpiresAt.getTime(), now + dispatchTokenTtlSeconds * 1000);

type Session = {
  transport: StreamableHTTPServerTransport;
  tokenId: string;
  tokenHash: string;
  holder: McpTokenHolder;
  runId: string;
  timer: NodeJS.Timeout;
  /** When its last POST was answered (or arrived), and how many are being answered now: idle is none for MCP_SESSION_IDLE_SECONDS. */
  lastSeenAt: number;
  busy: number;
};

const jsonRpcError = (
  response: ServerResponse,
  status: number,
  message: string,
  headers: Record<string, string> = {},
  detail: { id?: JSONRPCRequest['id']; code?: string } = {},
): void => {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  const error = { code: -32000, message, ...(detail.code ? { data: { code: detail.code } } : {}) };
  response.end(JSON.stringify({ jsonrpc: '2.0', error, id: detail.id ?? null }));
};

/** The tools/call requests in a POST body (one message, or a batch from an older protocol revision). */
const toolCallsIn = (body: unknown): JSONRPCRequest[] =>
  (Array.isArray(body) ? body : [body]).filter((message): message is JSONRPCRequest => isJSONRPCRequest(message) && message.method === 'tools/call');

// How long an elicited confirmation may wait for the person before the call gives up (nothing runs without a yes).
const QUESTION_TIMEOUT_MS = 5 * 60_000;

/**
 * The MCP door: a protected resource (OAuth 2.1 bearer tokens the platform issued for this URL, never login tokens),
 * Streamable HTTP sessions, each holding a direct run of its token's holder (minted as Rover's runs are, ended with the
 * session: deleted, idle, at its deadline, or when its token is refused), bounded per person, and tools/call published
 * on the tools exchange, bounded per token.
 */
@Injectable()
export class McpDoorService implements OnModuleInit, OnModuleDestroy {
  private readonly sessions = new Map<string, Session>();
  /** Sessions being opened per person; with those open, what MCP_SESSIONS_PER_USER bounds on this replica. */
  private readonly opening = new Map<string, number>();
  private idleSweep: NodeJS.Timeout | undefined;
  private readonly logger = new Logger('McpDoor');

  constructor(
    private readonly tokens: McpTokensService,
    private readonly threads: AgentThreadsService,
    private readonly publisher: McpToolPublisher,
    private readonly quota: ToolCallQuota,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  onModuleInit(): void {
    // A sweep a few times per idle period: a session ends at most a quarter of it late.
    this.idleSweep = setInterval(() => void this.closeIdle(), (this.config.MCP_SESSION_IDLE_SECONDS * 1000) / 4);
    this.idleSweep.unref();
  }

  /** RFC 9728 protected resource metadata. Tokens come from the Hub (Connected apps); there is no authorization server to discover. */
  metadata() {
    return {
      resource: this.config.MCP_RESOURCE_URL,
      authorization_servers: [new URL(this.config.MCP_RESOURCE_URL).origin],
      bearer_methods_supported: ['header'],
      resource_name: 'Naalya school platform tools',
      resource_documentation: `${new URL(this.config.MCP_RESOURCE_URL).origin}/`,
    };
  }

  async handle(request: IncomingMessage & { body?: unknown }, response: ServerResponse): Promise<void> {
    const challenge = `Bearer resource_metadata="${protectedResourceMetadataUrl(this.config.MCP_RESOURCE_URL)}"`;
    const [scheme, token] = String(request.headers['authorization'] ?? '').split(' ');
    if (scheme !== 'Bearer' || !token) {
      jsonRpcError(response, 401, 'Authorization required: a connected-app token from the Hub.', { 'www-authenticate': challenge });
      return;
    }
    const sessionId = request.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? this.sessions.get(sessionId) : undefined;
    const verdict = await this.tokens.authenticate(token, this.config.MCP_RESOURCE_URL);
    if ('refused' in verdict) {
      this.logger.warn(`security event: MCP token refused (${verdict.refused})`);
      // A session whose own token was revoked or expired ends now, and its direct run with it.
      if (existing && existing.tokenHash === mcpTokenHash(token)) await this.close(sessionId as string);
      jsonRpcError(response, 401, 'The token is invalid, expired or revoked.', {
        'www-authenticate': `${challenge}, error="invalid_token", error_description="The token is invalid, expired or revoked."`,
      });
      return;
    }
    if (!this.publisher.configured) {
      jsonRpcError(response, 503, 'The MCP door is not configured on this server (MCP_RABBITMQ_URL).');
      return;
    }
    if (typeof sessionId === 'string') {
      // A session answers only the token that opened it: another person's token, or another token of the same person, gets nothing.
      // A session that ended, or one another replica holds (sessions live in the process that opened them): 404, on
      // which the protocol has the client initialise a new one.
      if (!existing || existing.tokenId !== verdict.holder.tokenId) {
        jsonRpcError(response, 404, 'Session not found.');
        return;
      }
      if (request.method === 'POST' && !(await this.admitCalls(existing, request.body, response))) return;
      this.markBusy(existing, request, response);
      await existing.transport.handleRequest(request, response, request.body);
      return;
    }
    if (request.method !== 'POST' || !isInitializeRequest(request.body)) {
      jsonRpcError(response, 400, 'No session: start with an initialize request.');
      return;
    }
    await this.open(verdict.holder, token, request, response);
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.idleSweep);
    await Promise.all([...this.sessions.keys()].map((id) => this.close(id)));
  }

  /** Ends every session no request has reached for MCP_SESSION_IDLE_SECONDS (none is being answered). */
  async closeIdle(now: number = Date.now()): Promise<void> {
    const idleMs = this.config.MCP_SESSION_IDLE_SECONDS * 1000;
    const idle = [...this.sessions].filter(([, session]) => session.busy === 0 && now - session.lastSeenAt >= idleMs).map(([id]) => id);
    await Promise.all(idle.map((id) => this.close(id)));
  }

  /**
   * MCP_CALLS_PER_MINUTE_PER_TOKEN, counted per connected-app token rather than per session: a client opens sessions
   * at will (a new one resets nothing), and the token is what the person issued, named and can revoke for that client.
   * Refused with 429 and Retry-After before anything is published; the school's and the person's own quotas apply on
   * top, in execute(), as for Rover's calls.
   */
  private async admitCalls(session: Session, body: unknown, response: ServerResponse): Promise<boolean> {
    for (const call of toolCallsIn(body)) {
      if (await this.quota.takeOne(`mcp-token:${session.tokenId}`, this.config.MCP_CALLS_PER_MINUTE_PER_TOKEN)) continue;
      jsonRpcError(response, 429, HTTP_ERROR_SENTENCES.MCP_CLIENT_RATE_LIMITED, { 'retry-after': String(secondsLeftInWindow(Date.now())) }, {
        id: call.id,
        code: 'MCP_CLIENT_RATE_LIMITED',
      });
      return false;
    }
    return true;
  }

  /** A POST being answered keeps its session from idling out (an elicitation may wait minutes); a GET stream does not. */
  private markBusy(session: Session, request: IncomingMessage, response: ServerResponse): void {
    session.lastSeenAt = Date.now();
    if (request.method !== 'POST') return;
    session.busy += 1;
    response.once('close', () => {
      session.busy -= 1;
      session.lastSeenAt = Date.now();
    });
  }

  private async open(holder: McpTokenHolder, token: string, request: IncomingMessage & { body?: unknown }, response: ServerResponse): Promise<void> {
    const userId = holder.caller.sub;
    const open = [...this.sessions.values()].filter((session) => session.holder.caller.sub === userId).length;
    // Counted before any await: concurrent initializes of one person cannot pass the bound together.
    if (open + (this.opening.get(userId) ?? 0) >= this.config.MCP_SESSIONS_PER_USER) {
      jsonRpcError(response, 429, HTTP_ERROR_SENTENCES.MCP_SESSION_LIMIT, {}, { code: 'MCP_SESSION_LIMIT' });
      return;
    }
    this.opening.set(userId, (this.opening.get(userId) ?? 0) + 1);
    try {
      await this.openSession(holder, token, request, response);
    } finally {
      const left = (this.opening.get(userId) ?? 1) - 1;
      if (left > 0) this.opening.set(userId, left);
      else this.opening.delete(userId);
    }
  }

  private async openSession(holder: McpTokenHolder, token: string, request: IncomingMessage & { body?: unknown }, response: ServerResponse): Promise<void> {
    const deadline = mcpSessionDeadline(holder.expiresAt, this.config.DISPATCH_TOKEN_TTL_SECONDS, Date.now());
    const ttlSeconds = Math.max(1, Math.floor((deadline - Date.now()) / 1000));
    let context;
    try {
      context = await this.threads.openDirectRun({ ...(holder.campusId ? { campusId: holder.campusId } : {}), ttlSeconds }, holder.caller);
    } catch (error) {
      // The person deactivated, their campus gone, too many direct runs: said as the REST API says it.
      if (!(error instanceof HttpException)) throw error;
      jsonRpcError(response, error.getStatus(), error.message);
      return;
    }
    void this.tokens.touch(holder).catch(() => undefined);
    const server = createMcpSessionServer(context, holder.caller, {
      publish: (event, payload) => this.publisher.call(event, payload),
      callTimeoutMs: this.config.TOOL_HANDLER_TIMEOUT_MS,
      questionTimeoutMs: QUESTION_TIMEOUT_MS,
      approvalTtlSeconds: this.config.TOOL_APPROVAL_TTL_SECONDS,
    });
    const resource = new URL(this.config.MCP_RESOURCE_URL);
    const runId = context.run.runId;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // DNS rebinding: a page on another origin that resolves its name to this server gets nothing.
      enableDnsRebindingProtection: true,
      allowedHosts: [resource.host],
      onsessioninitialized: (id) => {
        // The session (and its direct run) ends at its deadline, whatever the client does.
        const timer = setTimeout(() => void this.close(id), Math.max(0, deadline - Date.now()));
        timer.unref();
        this.sessions.set(id, { transport, tokenId: holder.tokenId, tokenHash: mcpTokenHash(token), holder, runId, timer, lastSeenAt: Date.now(), busy: 0 });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) void this.close(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(request, response, request.body);
    // An initialize the transport refused (a bad host, say) made no session: its run is closed at once.
    if (!transport.sessionId || !this.sessions.has(transport.sessionId)) await this.closeRun(runId, holder);
  }

  /** Ends a session and the direct run it holds (idempotent). */
  private async close(id: string): Promise<void> {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    clearTimeout(session.timer);
    await session.transport.close().catch(() => undefined);
    await this.closeRun(session.runId, session.holder);
  }

  private async closeRun(runId: string, holder: McpTokenHolder): Promise<void> {
    await this.threads.closeDirectRun(runId, holder.caller).catch((error: unknown) => {
      this.logger.warn(`Could not close the direct run of an MCP session: ${error instanceof Error ? error.message : String(error)}`);
    });
  }
}
