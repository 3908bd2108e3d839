import type { AgentToolEvent, AgentToolPayload, AgentToolResult } from '@naalya/agent-tools';
import type { AgentToolCaller } from '../core/tools/agent-tool-caller.js';

export type RecordedCall = { event: string; payload: AgentToolPayload[AgentToolEvent] };

type Answer = AgentToolResult | ((payload: AgentToolPayload[AgentToolEvent]) => AgentToolResult);

/**
 * Records every call and answers from a table by event (default: an empty list with a scope sentence). The previews a
 * confirmable tool's proxy sends before its call are recorded apart (`previews`) and answered from their own table
 * (default: a question naming the event), since the server runs nothing for them.
 */
export class FakeToolCaller implements AgentToolCaller {
  readonly timeoutMs = 15_000;
  readonly calls: RecordedCall[] = [];
  readonly previews: RecordedCall[] = [];
  private readonly results = new Map<string, Answer>();
  private readonly previewResults = new Map<string, Answer>();

  answer(event: string, result: Answer): this {
    this.results.set(event, result);
    return this;
  }

  /** What the server's preview of a confirmable call answers: `{ data: { question } }`, or its refusal. */
  preview(event: string, result: Answer): this {
    this.previewResults.set(event, result);
    return this;
  }

  callsTo(event: string): RecordedCall[] {
    return this.calls.filter((call) => call.event === event);
  }

  async call<E extends AgentToolEvent>(event: E, payload: AgentToolPayload[E]): Promise<AgentToolResult> {
    const previewing = payload.meta.preview === true;
    (previewing ? this.previews : this.calls).push({ event, payload });
    const result =
      (previewing ? this.previewResults : this.results).get(event) ??
      (previewing ? { data: { question: `Confirm ${event}?` }, scopeContext: 'You can see the whole school.' } : { data: [], scopeContext: 'You can see the whole school.' });
    return typeof result === 'function' ? result(payload) : result;
  }
}
