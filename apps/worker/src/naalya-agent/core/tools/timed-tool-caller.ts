import { performance } from 'node:perf_hooks';
import type { AgentToolEvent, AgentToolPayload, AgentToolResult } from '@naalya/agent-tools';
import type { AgentToolCaller } from './agent-tool-caller.js';

// A decorator of the port: measures each hop (publish, server work, reply) around the real caller, keyed
// by the call's idempotency key, so the run's event stream can report hopMs beside the tool's result.
// One instance per run step; nothing is shared across runs.
export class TimedToolCaller implements AgentToolCaller {
  private readonly hops = new Map<string, number>();

  constructor(private readonly inner: AgentToolCaller) {}

  get timeoutMs(): number {
    return this.inner.timeoutMs;
  }

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    const started = performance.now();
    try {
      return await this.inner.call(event, payload);
    } finally {
      this.hops.set(payload.meta.callId, Math.round((performance.now() - started) * 10) / 10);
    }
  }

  /** Milliseconds of the hop made with this idempotency key, if one was made in this run step. */
  hopMs(callId: string): number | undefined {
    return this.hops.get(callId);
  }
}
