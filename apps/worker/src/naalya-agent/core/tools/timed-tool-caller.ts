import { Logger } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import type { AgentToolEvent, AgentToolPayload, AgentToolResult } from '@naalya/agent-tools';
import { secondsSince, withLogContext, writesLevel } from '@naalya/observability';
import { toolCallOutcome, workerMetrics } from '../../../app/observability/worker-metrics.js';
import type { AgentToolCaller } from './agent-tool-caller.js';

const toolCallLog = new Logger('ToolCalls');

const untilAborted = <T>(work: Promise<T>, signal: AbortSignal): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });

// A decorator of the port: measures each hop (publish, server work, reply) around the real caller, keyed
// by the call's idempotency key, so the run's event stream can report hopMs beside the tool's result.
// One instance per run step; nothing is shared across runs.
//
// With the step's signal, a call stops waiting once the step is aborted (its lease lost, or its time limit passed), and
// no call starts after that: the abort's reason is thrown, as LangChain's own tool invocation does on an aborted signal.
// A call already sent is not recalled; its late reply is dropped, and the server fences it by the run's epoch.
export class TimedToolCaller implements AgentToolCaller {
  private readonly hops = new Map<string, number>();

  constructor(
    private readonly inner: AgentToolCaller,
    private readonly signal?: AbortSignal,
  ) {}

  get timeoutMs(): number {
    return this.inner.timeoutMs;
  }

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    this.signal?.throwIfAborted();
    const started = performance.now();
    // A throw (timeout, stopped step) has no result code: counted as THREW, whatever the server went on to do.
    let outcome = 'THREW';
    try {
      const result = await withLogContext({ callId: payload.meta.callId }, () =>
        this.signal ? untilAborted(this.inner.call(event, payload), this.signal) : this.inner.call(event, payload),
      );
      outcome = toolCallOutcome(result);
      return result;
    } finally {
      this.hops.set(payload.meta.callId, Math.round((performance.now() - started) * 10) / 10);
      const seconds = secondsSince(started);
      workerMetrics.toolCalls.inc({ tool: event, outcome });
      workerMetrics.toolCallDuration.observe({ tool: event }, seconds);
      // One line per call at debug, inside the call's own context so it carries the callId beside the step's runId.
      if (writesLevel(toolCallLog, 'debug')) withLogContext({ callId: payload.meta.callId }, () => toolCallLog.debug({ msg: 'Tool call', tool: event, outcome, durationMs: Math.round(seconds * 10_000) / 10 }));
    }
  }

  /** Milliseconds of the hop made with this idempotency key, if one was made in this run step. */
  hopMs(callId: string): number | undefined {
    return this.hops.get(callId);
  }
}
