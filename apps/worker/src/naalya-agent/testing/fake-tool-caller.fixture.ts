import type { AgentToolEvent, AgentToolPayload, AgentToolResult } from '@naalya/agent-tools';
import type { AgentToolCaller } from '../core/tools/agent-tool-caller.js';

export type RecordedCall = { event: string; payload: AgentToolPayload[AgentToolEvent] };

/** Records every call and answers from a table by event (default: an empty list with a scope sentence). */
export class FakeToolCaller implements AgentToolCaller {
  readonly timeoutMs = 15_000;
  readonly calls: RecordedCall[] = [];
  private readonly results = new Map<string, AgentToolResult | ((payload: AgentToolPayload[AgentToolEvent]) => AgentToolResult)>();

  answer(event: string, result: AgentToolResult | ((payload: AgentToolPayload[AgentToolEvent]) => AgentToolResult)): this {
    this.results.set(event, result);
    return this;
  }

  callsTo(event: string): RecordedCall[] {
    return this.calls.filter((call) => call.event === event);
  }

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    this.calls.push({ event, payload });
    const result = this.results.get(event) ?? { data: [], scopeContext: 'You can see the whole school.' };
    return typeof result === 'function' ? result(payload) : result;
  }
}
