import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AgentRunEvent } from '@naalya/agent-tools';
import { deleteTopology, rmqNames } from '@naalya/rmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RABBITMQ_URL, createServerStack, type ServerStack } from './support/server-process.js';

// Both services as processes, the way `npm start` runs them: the built server and the built worker, with the
// scripted model, talking over the real RabbitMQ; the worker's checkpoints in PostgreSQL under its own role.
const WORKER_MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const SERVER_DIST = fileURLToPath(new URL('../../server/dist/', import.meta.url));
const CHECKPOINT_ROLE = { name: 'naalya_checkpoint_e2e', password: 'naalya_checkpoint_e2e' };

let stack: ServerStack;
let worker: ChildProcess | undefined;
let workerOutput = '';
let token: string;

const api = async <T>(path: string, body?: unknown): Promise<T> => {
  const response = await fetch(`${stack.baseUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
};

type StoredEvent = { seq: number; event: AgentRunEvent };

/** Reads the run's server-sent events until the server ends the stream (the step finished). */
const readStep = async (threadId: string, runId: string, afterSeq = 0): Promise<StoredEvent[]> => {
  const response = await fetch(`${stack.baseUrl}/agent/threads/${threadId}/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${token}`, ...(afterSeq ? { 'last-event-id': String(afterSeq) } : {}) },
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  return text
    .split('\n\n')
    .map((block) => Object.fromEntries(block.split('\n').map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()])))
    .filter((fields) => fields['data'] !== undefined && fields['id'] !== undefined)
    .map((fields) => ({ seq: Number(fields['id']), event: JSON.parse(fields['data'] ?? '{}') as AgentRunEvent }));
};

const startWorker = async (env: Record<string, string>) => {
  workerOutput = '';
  worker = spawn(process.execPath, [WORKER_MAIN], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  worker.stdout?.on('data', (chunk) => (workerOutput += chunk));
  worker.stderr?.on('data', (chunk) => (workerOutput += chunk));
  // Generous: loading LangChain takes seconds, and longer while every other suite runs beside this one.
  const deadline = Date.now() + 60_000;
  while (!workerOutput.includes('Worker ready')) {
    if (worker.exitCode !== null) throw new Error(`The worker exited at start-up:\n${workerOutput}`);
    if (Date.now() > deadline) throw new Error(`The worker was not ready within 60 s:\n${workerOutput}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

beforeAll(async () => {
  stack = await createServerStack();
  const checkpointUrl = new URL(stack.env['DATABASE_OWNER_URL'] ?? '');
  checkpointUrl.username = CHECKPOINT_ROLE.name;
  checkpointUrl.password = CHECKPOINT_ROLE.password;
  // The database setup again, now with the worker's checkpoint URL, as `npm start` runs it.
  const setup = spawnSync(process.execPath, [`${SERVER_DIST}cli/db-setup.js`], {
    env: { ...process.env, ...stack.env, CHECKPOINT_DATABASE_URL: checkpointUrl.toString() },
    encoding: 'utf8',
  });
  if (setup.status !== 0) throw new Error(`db-setup failed: ${setup.stderr || setup.stdout}`);
  await stack.start();
  await startWorker({
    RABBITMQ_URL,
    AGENT_TOOLS_QUEUE: stack.env['AGENT_TOOLS_QUEUE'] ?? '',
    AGENT_RUNS_QUEUE: stack.env['AGENT_RUNS_QUEUE'] ?? '',
    CHECKPOINT_DATABASE_URL: checkpointUrl.toString(),
    AGENT_MODEL: 'scripted',
    TOOL_CALL_TIMEOUT_MS: '5000',
    // 'log' prints the readiness line this test waits for.
    LOG_LEVEL: 'log',
  });
  token = await stack.login('admin@greenhill.school');
}, 120_000);

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    const exited = new Promise((resolve) => worker?.once('exit', resolve));
    worker.kill('SIGTERM');
    await exited;
  }
  await stack?.teardown();
  if (stack) await deleteTopology(RABBITMQ_URL, rmqNames(stack.env['AGENT_TOOLS_QUEUE'], stack.env['AGENT_RUNS_QUEUE']));
});

describe('a conversation through the server, the runs queue, the worker and back', () => {
  it('"list departments": the worker runs the step and the server streams its events in order', async () => {
    const { id: threadId } = await api<{ id: string }>('/agent/threads', {});
    const { runId } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message: 'list departments' });

    const events = (await readStep(threadId, runId)).map(({ event }) => event);

    expect(events.map((event) => event.type)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'RUN_FINISHED',
    ]);
    expect(events[1]).toMatchObject({ toolCallName: 'list_departments', event: 'list.departments', speaker: 'rover' });
    expect(events[3]).toMatchObject({ hopMs: expect.any(Number) });
    expect(events[5]).toMatchObject({ delta: expect.stringMatching(/^\[scripted model\] I found \d+ departments: .*Languages/) });
    expect(events[7]).toMatchObject({ outcome: 'success' });
  });

  it('"delete the Languages department": a question, the answer by interrupt id, then the audited delete', async () => {
    const { id: threadId } = await api<{ id: string }>('/agent/threads', {});
    const { runId } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message: 'delete the Languages department' });

    const asked = await readStep(threadId, runId);
    const finish = asked.at(-1)?.event;
    expect(finish).toMatchObject({ type: 'RUN_FINISHED', outcome: 'interrupt' });
    const [question] = finish?.type === 'RUN_FINISHED' ? (finish.interrupts ?? []) : [];
    expect(question).toMatchObject({ askedBy: 'rover', question: expect.stringContaining('Delete the Languages department') });

    const resumed = await api<{ resumed: boolean }>(`/agent/threads/${threadId}/resume`, { interruptId: question?.interruptId, answer: 'yes' });
    expect(resumed.resumed).toBe(true);
    const events = (await readStep(threadId, runId, asked.at(-1)?.seq)).map(({ event }) => event);

    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: 'success' });
    const deleted = events.find((event) => event.type === 'CUSTOM');
    expect(deleted).toMatchObject({ name: 'department.deleted', value: { auditId: expect.any(String) } });
    const auditId = deleted?.type === 'CUSTOM' ? deleted.value['auditId'] : undefined;
    const { rows } = await stack.owner.query(`SELECT action, resource_type FROM audit_log WHERE id = $1`, [auditId]);
    expect(rows).toHaveLength(1);
    const remaining = await stack.owner.query(`SELECT 1 FROM departments WHERE name = 'Languages' AND school_id = (SELECT id FROM schools WHERE name = 'Greenhill Academy')`);
    expect(remaining.rowCount).toBe(0);
  });
});
