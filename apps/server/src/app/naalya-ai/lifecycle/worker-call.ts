import type { Logger } from '@nestjs/common';
import type { AgentIdentity } from '@naalya/agent-tools';
import { runUnscoped, withSchool } from '../../core/tenancy/tenant-context.js';
import { verifyDispatchToken, type DispatchKeys } from '../dispatch/dispatch-token.js';
import type { RunSweeper } from './run-sweeper.service.js';

/** A worker's call about the run step it holds (a lease, a usage report): what its dispatch token alone says. */
export type WorkerCall = {
  runId: string;
  threadId: string;
  epoch: number;
  workerId: string;
  /** One unit of work as the run's owner: RLS binds every statement of the call to the run's school. */
  asOwner: <T>(work: () => Promise<T>) => Promise<T>;
};

const ownerFrame =
  (identity: AgentIdentity) =>
  <T>(work: () => Promise<T>): Promise<T> =>
    identity.schoolId ? withSchool(identity.schoolId, identity.sub, work) : runUnscoped(identity.sub, work);

/**
 * The run, its epoch and its owner of a worker's call, from the dispatch token alone (never from the worker, which only
 * names itself); null, with a security event logged, when the token is not the server's or has expired. One check for
 * every such call, so the lease and the usage report cannot come to trust different things.
 */
export const verifyWorkerCall = (
  signingKey: DispatchKeys,
  request: { dispatchToken: string; workerId: string },
  logger: Logger,
  what: string,
): WorkerCall | null => {
  const token = verifyDispatchToken(signingKey, request.dispatchToken);
  if (!token.ok) {
    logger.warn(`security event: ${what} refused (${token.reason}) for worker ${request.workerId}`);
    return null;
  }
  const { runId, threadId, epoch, identity } = token.claims;
  return { runId, threadId, epoch, workerId: request.workerId, asOwner: ownerFrame(identity) };
};

/** The refusals by which the call itself ended its run (RunLifecycle.claim and reportUsage failed it). */
const ENDING_REFUSALS: ReadonlySet<string> = new Set(['model_not_allowed', 'token_budget_spent', 'step_token_budget_spent']);

/**
 * After a call that ended its run has committed: the thread's next queued run starts now rather than at the next sweep
 * (the sweep still would, so a failure here is only logged).
 */
export const promoteIfEnded = async (sweeper: RunSweeper, call: WorkerCall, reason: string, logger: Logger): Promise<void> => {
  if (!ENDING_REFUSALS.has(reason)) return;
  await sweeper.promote(call.runId, call.threadId).catch((error: unknown) =>
    logger.warn(`Run ${call.runId}: the thread's next queued run waits for the sweeper (${error instanceof Error ? error.message : String(error)}).`),
  );
};
