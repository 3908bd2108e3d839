import type { AgentToolError } from './agent-tool-envelope.js';
import { isMutatingEvent } from './define-agent-tool.js';

/** How a call's publisher lost it: no answer within its deadline, or no broker (or no readable answer) at all. */
export type TransportFailure = 'timeout' | 'unreachable';

const INFRASTRUCTURE_ISSUE = 'This is an infrastructure issue, not a problem with your request.';

/**
 * The sentence for a call that got no answer, from every publisher (the worker's tool proxy, the MCP door). A write
 * that got no answer within its deadline may still have happened (the request can sit in the broker or run late), so it
 * is reported as "outcome unknown", never as a failure; a read changed nothing, so it simply failed.
 */
export const transportFailureMessage = (event: string, failure: TransportFailure, callId?: string): string => {
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

/** The coded error a publisher answers for a call it lost in transport. */
export const transportFailure = (event: string, failure: TransportFailure, callId?: string): AgentToolError => ({
  error: transportFailureMessage(event, failure, callId),
  code: failure === 'timeout' ? 'TOOL_TIMED_OUT' : 'PLATFORM_UNREACHABLE',
});
