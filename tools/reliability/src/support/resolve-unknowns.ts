import { getToolCallOutcomeTool, type AgentRuntimeContext } from '@naalya/agent-tools';
import type { CallOutcome, ToolCaller } from './caller.js';
import type { EffectProbe } from './reconcile.js';
import { sleep } from './run-phase.js';

/**
 * Asks get_tool_call_outcome, as the model is told to, about every write whose outcome the caller reported unknown,
 * and compares its answer with the database: a completed outcome for a write that happened, "no completed change" for
 * one that did not. Returns one line per disagreement; the lookups themselves are not calls of the phase.
 */
export const resolveUnknowns = async (input: {
  caller: ToolCaller;
  context: AgentRuntimeContext;
  outcomes: CallOutcome[];
  effects: EffectProbe;
}): Promise<{ resolved: number; disagreements: string[] }> => {
  const unknown = input.outcomes.filter((outcome) => outcome.mutating && outcome.kind === 'unknown' && outcome.effectKey);
  const effects = unknown.length ? await input.effects(unknown.map((outcome) => outcome.effectKey as string)) : new Map<string, number>();
  const disagreements: string[] = [];
  for (const outcome of unknown) {
    // A lookup that itself gets the infrastructure sentence is asked again, as the model would a little later.
    let answer = await input.caller.call(getToolCallOutcomeTool, { callId: outcome.callId }, input.context);
    for (const started = Date.now(); answer.kind === 'unknown' && Date.now() - started < 10_000; ) {
      await sleep(250);
      answer = await input.caller.call(getToolCallOutcomeTool, { callId: outcome.callId }, input.context);
    }
    const happened = (effects.get(outcome.effectKey as string) ?? 0) > 0;
    const completed = answer.kind === 'ok';
    if (answer.kind === 'unknown' || completed !== happened) {
      disagreements.push(
        `get_tool_call_outcome for ${outcome.callId.slice(0, 12)}: ${answer.kind === 'ok' ? 'completed' : answer.error?.slice(0, 80)}, but it ${happened ? 'happened' : 'did not happen'}`,
      );
    }
  }
  return { resolved: unknown.length - disagreements.length, disagreements };
};
