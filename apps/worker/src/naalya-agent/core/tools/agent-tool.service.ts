import {
  isMutatingEvent,
  type AgentToolEvent,
  type AgentToolPayload,
  type AgentToolResult,
} from '@naalya/agent-tools';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { ClientRMQ, RmqRecord } from '@nestjs/microservices';
import { rmqClientOptions } from '@naalya/rmq';
import { TimeoutError, defer, firstValueFrom, timeout } from 'rxjs';
import { brokerUserOf, describeBrokerError as describeError } from '../broker-credentials.js';
import type { AgentToolCaller } from './agent-tool-caller.js';

export type AgentToolServiceOptions = {
  rabbitmqUrl: string;
  toolsQueue: string;
  timeoutMs: number;
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

const isAgentToolResult = (reply: unknown): reply is AgentToolResult => {
  if (typeof reply !== 'object' || reply === null) return false;
  const candidate = reply as Record<string, unknown>;
  return typeof candidate['error'] === 'string' || ('data' in candidate && typeof candidate['scopeContext'] === 'string');
};

// The RMQ adapter behind the AgentToolCaller port. Semantic errors ({ error } results) pass through
// untouched; only transport failures are caught and mapped to a non-retryable sentence.
@Injectable()
export class AgentToolService implements AgentToolCaller, OnModuleInit, OnModuleDestroy {
  readonly timeoutMs: number;
  private readonly client: ClientRMQ;
  private readonly brokerUser: string | undefined;
  private readonly logger = new Logger(AgentToolService.name);

  constructor(@Inject(AGENT_TOOL_SERVICE_OPTIONS) private readonly options: AgentToolServiceOptions) {
    this.timeoutMs = options.timeoutMs;
    this.brokerUser = brokerUserOf(options.rabbitmqUrl);
    this.client = new ClientRMQ(rmqClientOptions({ url: options.rabbitmqUrl, queue: options.toolsQueue, connectionName: 'naalya-worker' }));
  }

  // Eager: the first tool call must not spend its timeout on connection and channel setup, and a
  // worker that cannot reach its broker is not ready, so start-up fails loudly instead of serving
  // runs whose every tool call would fail. After start-up, reconnects are the client's job and
  // calls made meanwhile get the infrastructure sentence.
  async onModuleInit(): Promise<void> {
    try {
      await firstValueFrom(defer(() => this.client.connect()).pipe(timeout(this.timeoutMs)));
    } catch (error) {
      await this.client.close();
      throw new Error(
        `Cannot connect to RabbitMQ for the "${this.options.toolsQueue}" queue: ${error instanceof TimeoutError ? `no connection within ${this.timeoutMs} ms` : describeError(error)}`,
      );
    }
  }

  // Calls still waiting get "Connection closed" and so the infrastructure sentence.
  async onModuleDestroy(): Promise<void> {
    this.logger.log(`Closing the connection to the "${this.options.toolsQueue}" queue`);
    await this.client.close();
  }

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    // The expiration drops a request nobody consumed in time, so a server that comes back later
    // cannot perform a call whose caller already gave up (reliability.md, finding 2).
    const record = new RmqRecord(payload, {
      expiration: String(this.timeoutMs),
      ...(this.brokerUser === undefined ? {} : { userId: this.brokerUser }),
    });
    try {
      const reply = await firstValueFrom(this.client.send<unknown>(event, record).pipe(timeout(this.timeoutMs)));
      if (isAgentToolResult(reply)) return reply;
      this.logger.warn(`Tool call "${event}" (callId ${payload.meta.callId}) got an unreadable reply`);
      return { error: transportFailureMessage(event, 'unreachable', payload.meta.callId) };
    } catch (error) {
      const failure: TransportFailure = error instanceof TimeoutError ? 'timeout' : 'unreachable';
      this.logger.warn(`Tool call "${event}" (callId ${payload.meta.callId}) failed in transport (${failure}): ${describeError(error)}`);
      return { error: transportFailureMessage(event, failure, payload.meta.callId) };
    }
  }
}
