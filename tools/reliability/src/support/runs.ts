import {
  OUTCOME_UNKNOWN_CODES,
  RPC_AGENT_TOOLS,
  createDepartmentTool,
  isMutatingEvent,
  type AgentRunEvent,
  type AgentRunStatus,
  type AgentToolResult,
  type CancelRunResponse,
  type MultitaskStrategy,
  type ToolErrorCode,
} from '@naalya/agent-tools';
import { toolCallIdempotencyKey } from '@naalya/worker/testing';
import type pg from 'pg';
import type { CallOutcome } from './caller.js';
import type { PhaseContext } from './run-phase.js';
import { sleep } from './run-phase.js';
import type { ReliabilityStack, WorkerProcess } from './stack.js';

// Conversations through the server's run routes, as a user of the API has them, and what the database says about
// their runs (read as the owner): for the phases about runs the server ends (leases, cancel, double-texting).

export type Reply<T> = { status: number; body: T & { code?: string; message?: string } };

export type Conversations = {
  newThread: () => Promise<string>;
  send: (threadId: string, message: string, multitaskStrategy?: MultitaskStrategy) => Promise<Reply<{ runId: string; status: 'running' | 'queued' }>>;
  cancel: (threadId: string, runId: string) => Promise<Reply<CancelRunResponse>>;
};

/** The persona's conversations on the current server (its base URL read at each request: a phase may restart it). */
export const conversationsOf = async (stack: ReliabilityStack, email: string): Promise<Conversations> => {
  const token = await stack.login(email);
  const request = async <T>(path: string, body: unknown): Promise<Reply<T>> => {
    const response = await fetch(`${stack.server().baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as Reply<T>['body'] };
  };
  return {
    newThread: async () => {
      const reply = await request<{ id: string }>('/agent/threads', {});
      if (reply.status !== 201) throw new Error(`POST /agent/threads: ${reply.status}`);
      return reply.body.id;
    },
    send: (threadId, message, multitaskStrategy) =>
      request(`/agent/threads/${threadId}/runs`, { message, ...(multitaskStrategy ? { multitaskStrategy } : {}) }),
    cancel: (threadId, runId) => request(`/agent/threads/${threadId}/runs/${runId}/cancel`, {}),
  };
};

export type RunRow = {
  id: string;
  thread_id: string;
  status: AgentRunStatus;
  epoch: number;
  attempts: number;
  error_code: string | null;
  error: string | null;
  lease_worker: string | null;
  created_at: Date;
};

export const runRow = async (owner: pg.Client, runId: string): Promise<RunRow | undefined> =>
  (
    await owner.query<RunRow>(
      `SELECT id, thread_id, status, epoch, attempts, error_code, error, lease_worker, created_at FROM agent_runs WHERE id = $1`,
      [runId],
    )
  ).rows[0];

export type StoredEvent = { seq: number; type: AgentRunEvent['type']; message_id: string; payload: AgentRunEvent; created_at: Date };

export const storedEvents = async (owner: pg.Client, runId: string): Promise<StoredEvent[]> =>
  (await owner.query<StoredEvent>(`SELECT seq, type, message_id, payload, created_at FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [runId])).rows;

export const FINAL: readonly AgentRunStatus[] = ['finished', 'failed', 'cancelled'];

/** Polls the run's row until `until` holds; resolves with the row and the time it took, or with undefined at the deadline. */
export const awaitRun = async (
  owner: pg.Client,
  runId: string,
  until: (row: RunRow) => boolean,
  timeoutMs: number,
): Promise<{ row: RunRow; ms: number } | undefined> => {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    const row = await runRow(owner, runId);
    if (row && until(row)) return { row, ms: Date.now() - started };
    await sleep(50);
  }
  return undefined;
};

/** The worker's id for its leases, from its start-up line. */
export const workerIdOf = (worker: WorkerProcess): string | undefined => worker.output().match(/Run leases are claimed as worker "([^"]+)"/)?.[1];

/** Departments of that exact name, every school. */
export const departmentCount = async (owner: pg.Client, name: string): Promise<number> =>
  Number((await owner.query<{ n: string }>(`SELECT count(*) AS n FROM departments WHERE name = $1`, [name])).rows[0]?.n ?? 0);

const UNKNOWN_CODES: ReadonlySet<string> = new Set(OUTCOME_UNKNOWN_CODES);
const TOOLS_BY_EVENT = new Map(RPC_AGENT_TOOLS.map((tool) => [tool.event as string, tool]));

/**
 * Records, for the reconciler, every write the phase's runs committed (the ledger names each write's run), as the
 * conversation reported it: the stored TOOL_CALL_RESULT of its tool call (ok or refused), a cancel's committedWrites
 * (ok: the user was told it stayed), or nothing at all (unknown: the worker died or the run was stopped first). A
 * department's name is its effect key, so a second department for one request shows as duplicated.
 */
export const recordRunWrites = async (record: PhaseContext['record'], owner: pg.Client, runIds: readonly string[]): Promise<CallOutcome[]> => {
  if (runIds.length === 0) return [];
  const { rows: writes } = await owner.query<{ call_id: string; event: string; result: AgentToolResult }>(
    `SELECT call_id, event, result FROM tool_call_ledger WHERE run_id = ANY($1::uuid[])`,
    [runIds],
  );
  const { rows: events } = await owner.query<{ thread_id: string; payload: AgentRunEvent }>(
    `SELECT r.thread_id, e.payload FROM agent_run_events e JOIN agent_runs r ON r.id = e.run_id
      WHERE e.run_id = ANY($1::uuid[]) AND (e.type = 'TOOL_CALL_RESULT' OR (e.type = 'RUN_FINISHED' AND e.payload->'outcome'->>'type' = 'cancelled'))`,
    [runIds],
  );
  const reported = new Map<string, AgentToolResult>();
  const listed = new Set<string>();
  for (const { thread_id: threadId, payload } of events) {
    if (payload.type === 'TOOL_CALL_RESULT') reported.set(toolCallIdempotencyKey(threadId, payload.toolCallId), JSON.parse(payload.content) as AgentToolResult);
    if (payload.type === 'RUN_FINISHED') for (const write of payload.metadata?.committedWrites ?? []) listed.add(write.callId);
  }
  return writes.map((write) => {
    const seen = reported.get(write.call_id);
    const failure = seen && 'error' in seen ? { error: seen.error, code: seen.code as ToolErrorCode } : undefined;
    const kind: CallOutcome['kind'] = failure ? (UNKNOWN_CODES.has(failure.code) ? 'unknown' : 'refused') : seen || listed.has(write.call_id) ? 'ok' : 'unknown';
    const data = 'data' in write.result ? (write.result.data as { name?: unknown }) : undefined;
    const effectKey = write.event === createDepartmentTool.event && typeof data?.name === 'string' ? data.name : undefined;
    return record({
      callId: write.call_id,
      tool: TOOLS_BY_EVENT.get(write.event)?.name ?? write.event,
      event: write.event,
      mutating: isMutatingEvent(write.event),
      kind,
      ...failure,
      result: seen ?? write.result,
      ms: 0,
      ...(effectKey ? { effectKey } : {}),
    });
  });
};

/** Lines of a process's output that match `pattern`. */
export const linesOf = (output: string, pattern: RegExp): string[] => output.split('\n').filter((line) => pattern.test(line));
