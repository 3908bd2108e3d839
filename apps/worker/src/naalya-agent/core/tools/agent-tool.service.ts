import {
  isAgentToolResult,
  isMutatingEvent,
  transportFailure,
  type TransportFailure,
  type AgentToolEvent,
  type AgentToolPayload,
  type AgentToolResult,
} from '@naalya/agent-tools';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { RmqRpcClient, RmqRpcError, rmqNames } from '@naalya/rmq';
import { brokerUserOf, describeBrokerError as describeError } from '../broker-credentials.js';
import type { AgentToolCaller } from './agent-tool-caller.js';
import { sendUntilDeadline, type ResendClock, type ResendPolicy, type SendOutcome } from './send-until-deadline.js';

export type AgentToolServiceOptions = {
  rabbitmqUrl: string;
  toolsQueue: string;
  timeoutMs: number;
  /** Which node of a RABBITMQ_URL list the first connection goes to; random by default. For the bench, whose raw baseline must call from the same node. */
  firstNode?: number;
  /** Shown by `rabbitmqctl list_connections client_properties`; 'naalya-worker' by default. */
  connectionName?: string;
  /** How lost calls are sent again (TOOL_CALL_RESENDS by default); the clock is a seam for the loop's unit tests. */
  resends?: { policy?: ResendPolicy; clock?: ResendClock };
};

export const AGENT_TOOL_SERVICE_OPTIONS = Symbol('AgentToolServiceOptions');

// The server could not confirm its commit: the same call sent again is answered from the ledger if it committed, and
// runs (once) if it did not.
const outcomeUnknownReply = (reply: unknown): boolean => isAgentToolResult(reply) && 'error' in reply && reply.code === 'OUTCOME_UNKNOWN';

// The server's masked failure: this delivery rolled back (a database connection cut under it, say). After an earlier
// send of the same write went unsettled, that says nothing of the earlier copy, which may have committed: reported as
// a failure it would be a ghost (the battery's audited writes found one), so it is sent again like a lost reply, and
// the ledger settles it. The refusals the server makes before it reads the ledger are the same for every copy.
const deliveryFailedReply = (reply: unknown): boolean => isAgentToolResult(reply) && 'error' in reply && reply.code === 'TOOL_FAILED';

const sendOutcomeOf = (error: unknown): SendOutcome<never> => {
  const reason = describeError(error);
  if (!(error instanceof RmqRpcError)) return { kind: 'lost', reason };
  if (error.failure === 'timeout') return { kind: 'timeout', reason };
  return error.failure === 'error-reply' ? { kind: 'failed', reason } : { kind: 'lost', reason };
};

// The RMQ adapter behind the AgentToolCaller port. Semantic errors ({ error } results) pass through untouched. A call
// whose request or reply a fault lost, or whose commit the server could not confirm, is sent again unchanged (same call
// id, arguments and dispatch token) until an answer comes or its deadline passes: the ledger makes a repeat safe, and
// the platform, not the model, settles the outcome. Only what is still unsettled at the deadline is mapped to the
// "outcome unknown" sentence.
//
// The loop lives here, not in RmqRpcClient: this is where a request is known to be a tool call, whose repeats the
// server answers as one by call id, and where its deadline is (the envelope's meta). The client stays a one-send
// transport for every request and reply of the worker (the run lease must not be sent again blindly); its own re-send
// of a publish the broker nacked stays inside one send.
@Injectable()
export class AgentToolService implements AgentToolCaller, OnModuleInit, OnModuleDestroy {
  readonly timeoutMs: number;
  private readonly client: RmqRpcClient;
  private resent = 0;
  private readonly logger = new Logger(AgentToolService.name);

  constructor(@Inject(AGENT_TOOL_SERVICE_OPTIONS) private readonly options: AgentToolServiceOptions) {
    this.timeoutMs = options.timeoutMs;
    // The tools exchange, never the queue through the default exchange: the worker's broker user may write only there.
    this.client = new RmqRpcClient({
      url: options.rabbitmqUrl,
      exchange: rmqNames(options.toolsQueue).toolsExchange,
      routingKey: options.toolsQueue,
      userId: brokerUserOf(options.rabbitmqUrl),
      connectionName: options.connectionName ?? 'naalya-worker',
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

  /** Sends of tool calls after their first, since start: what an operator reads (logged one line each as well). */
  get resends(): number {
    return this.resent;
  }

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    const { callId } = payload.meta;
    // The envelope's deadline is the one limit, and never later than this worker's own timeout from now.
    const deadline = Math.min(payload.meta.deadline, Date.now() + this.timeoutMs);
    // One correlation id for every send: a reply to an earlier send still settles the call, once.
    const correlationId = randomUUID();
    const mutating = isMutatingEvent(event);
    const { outcome, sends, unsettled } = await sendUntilDeadline<unknown>({
      deadline,
      // Each message expires with the time left, so a server that comes back later cannot perform a call whose caller
      // already gave up (reliability.md, finding 2).
      send: (timeLeftMs) =>
        this.client.call(event, payload, timeLeftMs, { correlationId }).then(
          (reply): SendOutcome<unknown> => ({ kind: 'reply', reply }),
          sendOutcomeOf,
        ),
      resendReply: (reply, afterUnsettled) => outcomeUnknownReply(reply) || (mutating && afterUnsettled && deliveryFailedReply(reply)),
      waitForConnection: (timeoutMs) => this.client.whenConnected(timeoutMs),
      onResend: (sendNumber, reason, timeLeftMs) => {
        this.resent += 1;
        this.logger.warn(`Re-sending tool call "${event}" (callId ${callId}), send ${sendNumber}, ${timeLeftMs} ms left: ${reason}`);
      },
      ...this.options.resends,
    });
    if (outcome.kind === 'reply') {
      if (mutating && unsettled && deliveryFailedReply(outcome.reply)) {
        this.logger.warn(`Tool call "${event}" (callId ${callId}) still unsettled after ${sends} sends: the last delivery failed, an earlier one may have committed`);
        return transportFailure(event, 'unreachable', callId);
      }
      if (isAgentToolResult(outcome.reply)) return outcome.reply;
      this.logger.warn(`Tool call "${event}" (callId ${callId}) got an unreadable reply`);
      return transportFailure(event, 'unreachable', callId);
    }
    const failure: TransportFailure = outcome.kind === 'timeout' ? 'timeout' : 'unreachable';
    this.logger.warn(`Tool call "${event}" (callId ${callId}) failed in transport after ${sends} sends (${failure}): ${outcome.reason}`);
    return transportFailure(event, failure, callId);
  }
}
