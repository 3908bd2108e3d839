import { randomUUID } from 'node:crypto';
import { createDepartmentTool, type RunStreamEvent, type AgentRuntimeContext, type CancelRunResponse, type ThreadDetail } from '@naalya/agent-tools';
import { RABBITMQ_URL, createTestStack, readRunEvents, type TestStack } from '@naalya/test-stack';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentToolService } from '../src/naalya-agent/core/tools/agent-tool.service.js';
import { toRpcProxy } from '../src/naalya-agent/core/tools/build-agent-tools.js';

// Runs the server ends, through both processes: the double-texting strategies, a cancel of a run waiting on a
// question and of a run in the middle of a write, and direct runs that end. The worker is the real built one with the
// scripted model; a write is held in its transaction by a lock another connection takes on its table.
let stack: TestStack;
let token: string;

type Reply = { status: number; body: Record<string, unknown> };

const call = async (method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, as = token): Promise<Reply> => {
  const response = await fetch(`${stack.server().baseUrl}${path}`, {
    method,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${as}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
};

const newThread = async (): Promise<string> => ((await call('POST', '/agent/threads', {})).body as { id: string }).id;
const send = (threadId: string, message: string, multitaskStrategy?: string) =>
  call('POST', `/agent/threads/${threadId}/runs`, { message, ...(multitaskStrategy ? { multitaskStrategy } : {}) });
const cancel = (threadId: string, runId: string) => call('POST', `/agent/threads/${threadId}/runs/${runId}/cancel`);
const thread = async (threadId: string) => (await call('GET', `/agent/threads/${threadId}`)).body as unknown as ThreadDetail;
const runOf = async (threadId: string, runId: string) => (await thread(threadId)).runs.find((run) => run.id === runId);

/** The run's stored events, in order, once the server has ended its stream (a queued run's ends at once: wait for it to start). */
const readStep = async (threadId: string, runId: string): Promise<RunStreamEvent[]> => {
  await waitFor(async () => (await runOf(threadId, runId))?.status !== 'queued', `run ${runId} to leave the queue`);
  return (await readRunEvents(stack.server().baseUrl, token, { threadId, runId }, { signal: AbortSignal.timeout(30_000) })).map(({ event }) => event);
};

/** Rows read as the database owner (every school). */
const rows = async <T>(sql: string, parameters: unknown[] = []): Promise<T[]> => (await stack.owner.query(sql, parameters)).rows as T[];

const waitFor = async (check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}.`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

/** Holds inserts into `departments` until released: a write of a run then waits inside its transaction. */
const holdDepartments = async () => {
  const client = new pg.Client({ connectionString: stack.env['DATABASE_OWNER_URL'] });
  await client.connect();
  await client.query('BEGIN');
  await client.query('LOCK TABLE departments IN SHARE ROW EXCLUSIVE MODE');
  const waiters = async () => (await rows<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'departments'::regclass AND NOT granted`))[0]?.n ?? 0;
  return {
    waiters,
    release: async () => {
      await client.query('ROLLBACK').catch(() => undefined);
      await client.end();
    },
  };
};

const departmentCount = async (name: string) => (await rows<{ n: number }>(`SELECT count(*)::int AS n FROM departments WHERE name = $1`, [name]))[0]?.n;

/** The first stored event of a type, with its time: runs of one thread must not overlap. */
const eventTime = async (runId: string, type: string, order: 'ASC' | 'DESC') =>
  (await rows<{ created_at: Date }>(`SELECT created_at FROM agent_run_events WHERE run_id = $1 AND type = $2 ORDER BY seq ${order} LIMIT 1`, [runId, type]))[0]?.created_at.getTime() ??
  NaN;

beforeAll(async () => {
  stack = await createTestStack({ name: 'lifecycle' });
  await stack.startServer();
  await stack.startWorker();
  token = await stack.login('admin@greenhill.school');
}, 120_000);

afterAll(async () => {
  await stack?.teardown();
});

describe('double-texting and cancel, through the server and the worker', () => {
  it('while a question waits, a new message is refused (reject, enqueue); interrupt cancels the waiting run and the new one runs', async () => {
    const threadId = await newThread();
    const asked = await send(threadId, 'delete the Languages department');
    expect(asked.status).toBe(201);
    const waiting = asked.body['runId'] as string;
    const first = await readStep(threadId, waiting);
    expect(first.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'interrupt' } });

    expect(await send(threadId, 'list departments')).toMatchObject({ status: 409, body: { code: 'RUN_IN_PROGRESS' } });
    expect(await send(threadId, 'list departments', 'enqueue')).toMatchObject({ status: 409, body: { code: 'QUESTION_PENDING' } });
    const next = await send(threadId, 'list departments', 'interrupt');
    expect(next).toMatchObject({ status: 201, body: { status: 'running' } });

    expect((await readStep(threadId, waiting)).at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
    expect((await readStep(threadId, next.body['runId'] as string)).at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    const cancelled = await runOf(threadId, waiting);
    expect(cancelled).toMatchObject({ status: 'cancelled' });
    expect(cancelled?.interrupts.every((interrupt) => interrupt.voided)).toBe(true);
    // Nothing was approved, so nothing was deleted, and the voided question cannot be answered any more.
    expect(await departmentCount('Languages')).toBeGreaterThan(0);
    const interruptId = cancelled?.interrupts[0]?.interruptId;
    expect(await call('POST', `/agent/threads/${threadId}/resume`, { interruptId, answer: 'yes' })).toMatchObject({ status: 409, body: { code: 'STALE_INTERRUPT' } });
  });

  it('cancel of a run waiting on a question ends its stream cancelled, voids the question and frees the thread; a second cancel changes nothing', async () => {
    const threadId = await newThread();
    const runId = (await send(threadId, 'delete the Sciences department')).body['runId'] as string;
    expect((await readStep(threadId, runId)).at(-1)).toMatchObject({ outcome: { type: 'interrupt' } });

    const stopped = await cancel(threadId, runId);
    expect(stopped).toMatchObject({ status: 200, body: { runId, status: 'cancelled', cancelled: true, committedWrites: [] } });
    expect(await cancel(threadId, runId)).toMatchObject({ status: 200, body: { runId, status: 'cancelled', cancelled: false } });
    expect((await readStep(threadId, runId)).at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
    expect((await send(threadId, 'list campuses')).status).toBe(201);

    // Only the owner may stop a run: another user of the same school reads it as not found.
    const colleague = await stack.login('teacher@greenhill.school');
    expect((await call('POST', `/agent/threads/${threadId}/runs/${runId}/cancel`, undefined, colleague)).status).toBe(404);
  });

  it('enqueue: messages sent while a run works wait, then run one after another in the order sent', async () => {
    const threadId = await newThread();
    const lock = await holdDepartments();
    let first: string;
    try {
      first = (await send(threadId, `create a department called Queue ${randomUUID().slice(0, 6)}`)).body['runId'] as string;
      await waitFor(async () => (await lock.waiters()) > 0, 'the write to wait on the lock');
      const second = await send(threadId, 'list campuses', 'enqueue');
      const third = await send(threadId, 'list subjects', 'enqueue');
      expect(second.body).toMatchObject({ status: 'queued' });
      expect(third.body).toMatchObject({ status: 'queued' });
      expect((await runOf(threadId, second.body['runId'] as string))?.status).toBe('queued');
      await lock.release();
      const ids = [first, second.body['runId'] as string, third.body['runId'] as string];
      for (const runId of ids) expect((await readStep(threadId, runId)).at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
      // Never two runs at once in the thread: each started after the one before it finished.
      for (let index = 1; index < ids.length; index++) {
        expect(await eventTime(ids[index] as string, 'RUN_STARTED', 'ASC')).toBeGreaterThanOrEqual(await eventTime(ids[index - 1] as string, 'RUN_FINISHED', 'DESC'));
      }
    } finally {
      await lock.release();
    }
  });

  it('cancel during a slow write: the write commits before the cancel answers and is listed, and the worker writes nothing after', async () => {
    const threadId = await newThread();
    const name = `Cancelled ${randomUUID().slice(0, 6)}`;
    const lock = await holdDepartments();
    try {
      const runId = (await send(threadId, `create a department called ${name}`)).body['runId'] as string;
      await waitFor(async () => (await lock.waiters()) > 0, 'the write to wait on the lock');
      const cancelling = cancel(threadId, runId);
      // The cancel waits for the write inside its transaction; let it queue behind it, then let the write go.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await lock.release();
      const stopped = (await cancelling).body as unknown as CancelRunResponse;
      expect(stopped).toMatchObject({ status: 'cancelled', cancelled: true });
      expect(await departmentCount(name)).toBe(1);
      expect(stopped.committedWrites).toEqual([expect.objectContaining({ event: createDepartmentTool.event, auditId: expect.any(String) })]);
      const events = await readStep(threadId, runId);
      expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'cancelled' } });
      // The worker's own end of the step (its answer, RUN_FINISHED success) was refused: the cancel is the last word.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const stored = await rows<{ type: string }>(`SELECT type FROM agent_run_events WHERE run_id = $1 ORDER BY seq`, [runId]);
      expect(stored.at(-1)?.type).toBe('RUN_FINISHED');
      expect(stored.filter((row) => row.type === 'RUN_FINISHED')).toHaveLength(1);
    } finally {
      await lock.release();
    }
  });
});

describe('direct runs end', () => {
  it('a direct run works until it is closed; then its calls are refused, and closing again or as another user changes nothing', async () => {
    const context: AgentRuntimeContext = await stack.contextFor('admin@greenhill.school');
    const caller = new AgentToolService({ rabbitmqUrl: RABBITMQ_URL, toolsQueue: stack.toolsQueue, timeoutMs: 5_000 });
    await caller.onModuleInit();
    try {
      // As LangGraph's ToolNode invokes the worker's proxy (see tool-hop.e2e-spec).
      const create = async (name: string) =>
        String(
          await toRpcProxy(createDepartmentTool, caller).invoke({ name }, {
            context,
            toolCallId: `call-${randomUUID()}`,
            writer: null,
            configurable: { thread_id: 'e2e' },
          } as never),
        );
      const open = await create(`Direct ${randomUUID().slice(0, 6)}`);
      expect(open).not.toContain('DISPATCH_REFUSED');

      const colleague = await stack.login('teacher@greenhill.school');
      expect((await call('DELETE', `/agent/context/${context.run.runId}`, undefined, colleague)).status).toBe(404);
      expect((await call('DELETE', `/agent/context/${context.run.runId}`)).status).toBe(204);
      expect((await call('DELETE', `/agent/context/${context.run.runId}`)).status).toBe(204);
      const closedName = `Closed ${randomUUID().slice(0, 6)}`;
      expect(await create(closedName)).toContain('DISPATCH_REFUSED');
      expect(await departmentCount(closedName)).toBe(0);
    } finally {
      await caller.onModuleDestroy();
    }
  });
});
