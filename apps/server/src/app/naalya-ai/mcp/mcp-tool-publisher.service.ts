import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { isAgentToolResult, transportFailure, type AgentToolEvent, type AgentToolPayload, type AgentToolResult } from '@naalya/agent-tools';
import { RmqRpcClient, RmqRpcError, brokerCredentialsOf, rmqNames } from '@naalya/rmq';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';

/**
 * The door's side of the tool hop: publishes a tools/call on the tools exchange, as the door's own broker user
 * (MCP_RABBITMQ_URL, whose user must be MCP_BROKER_USER), and waits for the server's @MessagePattern handler to answer
 * on direct reply-to. The same path as the worker's calls; nothing here runs a tool in memory. A call is sent once: an
 * MCP client that got no answer may repeat its request (same session and request id, so the same call id), and the
 * ledger answers the repeat of a write that committed. A lost call is answered with the worker's sentence
 * (transportFailure): outcome unknown for a write, simply failed for a read.
 */
@Injectable()
export class McpToolPublisher implements OnModuleDestroy {
  private client: RmqRpcClient | undefined;
  private readonly logger = new Logger(McpToolPublisher.name);

  constructor(@Inject(SERVER_CONFIG) private readonly config: ServerConfig) {}

  /** Whether the door has a broker connection of its own configured at all. */
  get configured(): boolean {
    return this.config.MCP_RABBITMQ_URL !== undefined;
  }

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    const timeoutMs = Math.max(1, payload.meta.deadline - Date.now());
    try {
      const client = await this.connected(timeoutMs);
      const reply = await client.call(event, payload, timeoutMs);
      if (isAgentToolResult(reply)) return reply;
      this.logger.warn(`Tool call "${event}" (callId ${payload.meta.callId}) got an unreadable reply`);
      return transportFailure(event, 'unreachable', payload.meta.callId);
    } catch (error) {
      this.logger.warn(`Tool call "${event}" (callId ${payload.meta.callId}) failed in transport: ${error instanceof Error ? error.message : String(error)}`);
      return transportFailure(event, error instanceof RmqRpcError && error.failure === 'timeout' ? 'timeout' : 'unreachable', payload.meta.callId);
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.client?.close();
  }

  // Connected on the first call, not at start-up: a server whose door is never used opens no second broker connection.
  private async connected(timeoutMs: number): Promise<RmqRpcClient> {
    const url = this.config.MCP_RABBITMQ_URL;
    if (url === undefined) throw new Error('MCP_RABBITMQ_URL is not set');
    if (!this.client) {
      this.client = new RmqRpcClient({
        url,
        // The tools exchange: the door's broker user may write nothing else.
        exchange: rmqNames(this.config.AGENT_TOOLS_QUEUE).toolsExchange,
        routingKey: this.config.AGENT_TOOLS_QUEUE,
        userId: brokerCredentialsOf(url).user,
        connectionName: 'naalya-mcp-door',
        logger: this.logger,
      });
    }
    if (!this.client.connected) await this.client.connect(timeoutMs);
    return this.client;
  }
}
