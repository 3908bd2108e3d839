import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { HttpException, Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { AgentThreadsService } from '../threads/agent-threads.service.js';
import { createMcpSessionServer } from './mcp-session.js';
import { McpToolPublisher } from './mcp-tool-publisher.service.js';
import { McpTokensService, mcpTokenHash, type McpTokenHolder } from './mcp-tokens.service.js';

/** RFC 9728: where a resource at `https://host/path` publishes its metadata. */
export const protectedResourceMetadataUrl = (resource: string): string => {
  const url = new URL(resource);
  return `${url.origin}/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname}`;
};

type Session = {
  transport: StreamableHTTPServerTransport;
  tokenId: string;
  tokenHash: string;
  holder: McpTokenHolder;
  runId: string;
  timer: NodeJS.Timeout;
};

const jsonRpcError = (response: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void => {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
};

// How long an elicited confirmation may wait for the person before the call gives up (nothing runs without a yes).
const QUESTION_TIMEOUT_MS = 5 * 60_000;

/**
 * The MCP door: a protected resource (OAuth 2.1 bearer tokens the platform issued for this URL, never login tokens),
 * Streamable HTTP sessions, each holding a direct run of its token's holder (minted as Rover's runs are, ended with the
 * session, at its token's expiry, or when its token is refused), and tools/call published on the tools exchange.
 */
@Injectable()
export class McpDoorService implements OnModuleDestroy {
  private readonly sessions = new Map<string, Session>();
  private readonly logger = new Logger('McpDoor');

  constructor(
    private readonly tokens: McpTokensService,
    private readonly threads: AgentThreadsService,
    private readonly publisher: McpToolPublisher,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

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
      if (!existing || existing.tokenId !== verdict.holder.tokenId) {
        jsonRpcError(response, 404, 'Session not found.');
        return;
      }
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
    await Promise.all([...this.sessions.keys()].map((id) => this.close(id)));
  }

  private async open(holder: McpTokenHolder, token: string, request: IncomingMessage & { body?: unknown }, response: ServerResponse): Promise<void> {
    const ttlSeconds = Math.max(1, Math.floor((holder.expiresAt.getTime() - Date.now()) / 1000));
    let context;
    try {
      context = await this.threads.openDirectRun({ ...(holder.campusId ? { campusId: holder.campusId } : {}), ttlSeconds }, holder.caller);
    } catch (error) {
      // The person deactivated, their campus gone, too many open sessions: said as the REST API says it.
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
        // The session (and its direct run) ends at its token's expiry or its run's, whichever comes first.
        const endsInMs = Math.min(holder.expiresAt.getTime(), Date.now() + Math.min(ttlSeconds, this.config.DISPATCH_TOKEN_TTL_SECONDS) * 1000) - Date.now();
        const timer = setTimeout(() => void this.close(id), Math.max(0, endsInMs));
        timer.unref();
        this.sessions.set(id, { transport, tokenId: holder.tokenId, tokenHash: mcpTokenHash(token), holder, runId, timer });
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
