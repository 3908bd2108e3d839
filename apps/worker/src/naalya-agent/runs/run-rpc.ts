import type { z } from 'zod';

/** What carries a run's requests to the server (the lease, the usage report): AgentToolService's request(), on the worker's one tools client. */
export type RunRpc = {
  readonly timeoutMs: number;
  request(pattern: string, data: unknown, timeoutMs?: number): Promise<unknown>;
};

/** No answer a run request can be read from (no connection, timeout, an error or unreadable reply): neither yes nor no. */
export class RunRpcUnansweredError extends Error {
  override readonly name = 'RunRpcUnansweredError';
}

/**
 * One request about a run and the server's answer, read with the contract's reply schema. The body is parsed with its
 * schema before it leaves, so a worker bug is a thrown error here, not a refusal from the server.
 */
export const askServer = async <Reply>(
  rpc: RunRpc,
  what: string,
  request: { pattern: string; body: unknown; replySchema: z.ZodType<Reply> },
  timeoutMs: number = rpc.timeoutMs,
): Promise<Reply> => {
  let reply: unknown;
  try {
    reply = await rpc.request(request.pattern, request.body, timeoutMs);
  } catch (error) {
    throw new RunRpcUnansweredError(`${what} got no answer: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = request.replySchema.safeParse(reply);
  if (!parsed.success) throw new RunRpcUnansweredError(`${what} got an unreadable reply`);
  return parsed.data;
};
