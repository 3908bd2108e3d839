import type { RunUsage } from '@naalya/agent-tools';
import { AIMessage } from '@langchain/core/messages';
import { isGraphBubbleUp } from '@langchain/langgraph';
import { createMiddleware } from 'langchain';
import { secondsSince } from '@naalya/observability';
import { workerMetrics } from '../../../app/observability/worker-metrics.js';
import { estimatedUsage } from '../model/estimated-usage.js';
import { ModelCallError, classifyModelError } from '../model/model-errors.js';

/**
 * Reports one model call's tokens and resolves when the step may go on; throws (the step's stop reason) when it may not.
 * The executor makes one per step: it reports as the step's lease holder and stops the step on a "stop".
 */
export type UsageReporter = (usage: RunUsage) => Promise<void>;

/** The tokens the provider reported for the call, or an estimate when it reported none. */
export const usageOf = (sent: Parameters<typeof estimatedUsage>[0], reply: AIMessage): RunUsage => {
  const reported = reply.usage_metadata;
  if (!reported) return estimatedUsage(sent, reply);
  return { inputTokens: Math.max(0, Math.round(reported.input_tokens)), outputTokens: Math.max(0, Math.round(reported.output_tokens)) };
};

/**
 * Every model call of a step, Rover's and each specialist's, as the platform must see it:
 *
 * - its tokens are reported to the server, and the reply is acted on only once the server has answered (the school's
 *   daily budget and the step's own are counted there, across replicas); a "stop" ends the step before any tool of the
 *   reply runs;
 * - a call the provider client gave up on (after its retries) becomes a ModelCallError whose code names what happened,
 *   so the user is told in a fixed sentence and the provider's own text, which may carry a key or a URL, stays in the log.
 *
 * Innermost of the model-call middleware, so the usage is the provider's reply's and the failure is the provider's.
 */
export const modelCallMiddleware = (reportUsage: UsageReporter) =>
  createMiddleware({
    name: 'ModelCallMiddleware',
    wrapModelCall: async (request, handler) => {
      let response: Awaited<ReturnType<typeof handler>>;
      const started = performance.now();
      try {
        response = await handler(request);
      } catch (error) {
        // A step stopped from outside (lease lost, time limit) or an interrupt is not the model's failure.
        if (request.runtime.signal?.aborted || isGraphBubbleUp(error)) {
          workerMetrics.modelCalls.inc({ outcome: 'stopped' });
          throw error;
        }
        const failure = error instanceof ModelCallError ? error : new ModelCallError(classifyModelError(error), error);
        workerMetrics.modelCalls.inc({ outcome: failure.code });
        workerMetrics.modelCallDuration.observe(secondsSince(started));
        throw failure;
      }
      workerMetrics.modelCalls.inc({ outcome: 'ok' });
      workerMetrics.modelCallDuration.observe(secondsSince(started));
      if (AIMessage.isInstance(response)) {
        const usage = usageOf(request.messages, response);
        workerMetrics.modelTokens.inc({ direction: 'input' }, usage.inputTokens);
        workerMetrics.modelTokens.inc({ direction: 'output' }, usage.outputTokens);
        await reportUsage(usage);
      }
      return response;
    },
  });
