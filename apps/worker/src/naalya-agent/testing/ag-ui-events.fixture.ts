import type { AgentRunEvent } from '@naalya/agent-tools';
import { verifyEvents, type BaseEvent } from '@ag-ui/client';
import { from } from 'rxjs';

/**
 * Runs events through the AG-UI client's own verifier (what an AG-UI client checks as it reads a stream: a run's
 * lifecycle, messages and tool calls opened before use and closed before the run ends, subagents started once and
 * finished, attribution consistent); resolves to how many it accepted, rejects with its reason.
 */
export const acceptedByAgUi = (events: readonly AgentRunEvent[]): Promise<number> =>
  new Promise((resolve, reject) => {
    let accepted = 0;
    // @ag-ui/client bundles its own rxjs; an observable of ours is read the same way, only its type differs.
    verifyEvents(false)(from(events as unknown as BaseEvent[]) as never).subscribe({
      next: () => {
        accepted += 1;
      },
      error: reject,
      complete: () => resolve(accepted),
    });
  });
