import {
  isMutatingEvent,
  isToolErrorCode,
  type AgentToolError,
  type AgentToolEvent,
  type AgentToolPayload,
  type AgentToolResult,
} from '@naalya/agent-tools';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { RmqRpcClient, RmqRpcError, rmqNames } from '@naalya/rmq';
import { brokerUserOf, describeBrokerError as describeError } from '../broker-credentials.js';
import type { AgentToolCaller } from './agent-tool-caller.js';

export type AgentToolServiceOptions = {
  rabbitmqUrl: string;
  toolsQueue: string;
  timeoutMs: number;
  /** Which node of a RABBITMQ_URL list the first connection goes to; random by default. For the bench, whose raw baseline must call from the same node. */
  firstNode?: number;
};

export const AGENT_TOOL_SERVICE_OPTIONS = Symbol('AgentToolServiceOptions');

type TransportFailure = 'timeout' | 'unreachable';

const INFRASTRUCTURE_ISSUE = 'This is an infrastructure issue, not a problem with your request.';

// A write that got no answer may still have happened (the request can sit in the broker or run
// late), so it is reported as "outcome unknown", never as a failure.
export const transportFailureMessage = (event: AgentToolEvent, failure: TransportFailure, callId?: string): string => {
  const what =
    failure === 'timeout'
      ? `The "${event}" tool timed out, the platform may be slow and could still be processing the request.`
      : `The "${event}" tool could not reach the platform or did not get a usable answer back.`;
  const next = isMutatingEvent(event)
    ? 'The outcome is unknown: the change may still complete. Do not retry this call; tell the user the outcome is unknown and ask them to check whether the change was made before trying again.' +
      (callId ? ` You can check it yourself with get_tool_call_outcome and callId "${callId}".` : '')
    : 'Do not retry this call; tell the user it is unavailable right now.';
  return `${what} ${INFRASTRUCTURE_ISSUE} ${next}`;
};

const transportFailure = (event: AgentToolEvent, failure: TransportFailure, callId: string): AgentToolError => ({
  error: transportFailureMessage(event, failure, callId),
  code: failure === 'timeout' ? 'TOOL_TIMED_OUT' : 'PLATFORM_UNREACHABLE',
});

const isAgentToolResult = (reply: unknown): reply is AgentToolResult => {
  if (typeof reply !== 'object' || reply === null) return false;
  const candidate = reply as Record<string, unknown>;
  return (typeof candidate['error'] === 'string' && isToolErrorCode(candidate['code'])) || ('data' in candidate && typeof candidate['scopeContext'] === 'string');
};

// The RMQ adapter behind the AgentToolCaller port. Semantic errors ({ error } results) pass through
// untouched; only transport failures are caught and mapped to a non-retryable sentence.
@Injectable()
export class AgentToolService implements AgentToolCaller, OnModuleInit, OnModuleDestroy {
  readonly timeoutMs: number;
  private readonly client: RmqRpcClient;
  private readonly logger = new Logger(AgentToolService.name);

  constructor(@Inject(AGENT_TOOL_SERVICE_OPTIONS) private readonly options: AgentToolServiceOptions) {
    this.timeoutMs = options.timeoutMs;
    // The tools exchange, never the queue through the default exchange: the worker's broker user may write only there.
    this.client = new RmqRpcClient({
      url: options.rabbitmqUrl,
      exchange: rmqNames(options.toolsQueue).toolsExchange,
      routingKey: options.toolsQueue,
      userId: brokerUserOf(options.rabbitmqUrl),
      connectionName: 'naalya-worker',
      logger: this.logger,
      firstNode: options.firstNode,
    });
  }

  // Eager: the first tool call must not spend its timeout on connection and channel setup, and a
  // worker that cannot reach its broker is not ready, so start-up fails loudly instead of serving
  // runs whose every tool call would fail. After start-up, reconnects are the client's job and
  // calls made meanwhile get the infrastructure sentence.
  async onModuleInit(): Promise<void> {
    try {
      await this.client.connect(this.timeoutMs);
    } catch (error) {
      await this.client.close();
      throw new Error(`Cannot connect to RabbitMQ for the "${this.options.toolsQueue}" queue: ${describeError(error)}`);
    }
  }

  /** Whether the broker connection is up: the worker's readiness. */
  get connected(): boolean {
    return this.client.connected;
  }

  // Calls still waiting fail at once, and so get the infrastructure sentence.
  async onModuleDestroy(): Promise<void> {
    this.logger.log(`Closing the connection to the "${this.options.toolsQueue}" queue`);
    await this.client.close();
  }

  /**
   * Another request and reply on the tools queue, over the same connection and client (the worker's broker user may
   * write only the tools exchange): the run lease. Resolves with the server's response, unchecked; rejects with an
   * RmqRpcError when none came (no connection, timeout, an error reply).
   */
  request(pattern: string, data: unknown, timeoutMs: number = this.timeoutMs): Promise<unknown> {
    return this.client.call(pattern, data, timeoutMs);
  }

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    try {
      // The message expires with the timeout, so a server that comes back later cannot perform a call
      // whose caller already gave up (reliability.md, finding 2).
      const reply = await this.client.call(event, payload, this.timeoutMs);
      if (isAgentToolResult(reply)) return reply;
      this.logger.warn(`Tool call "${event}" (callId ${payload.meta.callId}) got an unreadable reply`);
      return transportFailure(event, 'unreachable', payload.meta.callId);
    } catch (error) {
      const failure: TransportFailure = error instanceof RmqRpcError && error.failure === 'timeout' ? 'timeout' : 'unreachable';
      this.logger.warn(`Tool call "${event}" (callId ${payload.meta.callId}) failed in transport (${failure}): ${describeError(error)}`);
      return transportFailure(event, failure, payload.meta.callId);
    }
  }
}
