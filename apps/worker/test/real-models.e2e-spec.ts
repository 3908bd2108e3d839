import { createServer } from 'node:net';
import { ERROR_SENTENCES, type RunStreamEvent } from '@naalya/agent-tools';
import { startModelSimulator, type ModelSimulator, type RecordedRequest, type TurnInput } from '@naalya/model-simulator';
import { createTestStack, readRunEvents, type BuiltProcess, type TestStack } from '@naalya/test-stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The built server and worker as processes, the worker's model a real provider package (@langchain/openai, then
// @langchain/anthropic) talking to the model simulator over HTTP: what the model was told, what crossed the hop and what
// the database holds, for each way a real model behaves or fails. One stack; one worker per provider at a time.
let stack: TestStack;
let sim: ModelSimulator;
let token: string;

const DECLINED_REPLY = 'The language model declined to answer this request, so nothing was done. You can rephrase it, or ask something else.';

const api = async <T>(path: string, body?: unknown): Promise<T> => {
  const response = await fetch(`${stack.server().baseUrl}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
};

/** Scripts the model, sends one message in a new thread, and reads the step's events to their end. */
const converse = async (turns: TurnInput[], message = 'please help') => {
  sim.reset();
  sim.setScript({ turns });
  const { id: threadId } = await api<{ id: string }>('/agent/threads', {});
  const { runId } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message });
  const events = (await readRunEvents(stack.server().baseUrl, token, { threadId, runId }, { signal: AbortSignal.timeout(40_000) })).map(({ event }) => event);
  return { events, requests: sim.requests() };
};

const textOf = (events: RunStreamEvent[]) => events.flatMap((event) => (event.type === 'TEXT_MESSAGE_CONTENT' ? [event.delta] : [])).join('');
const resultsOf = (events: RunStreamEvent[]) => events.flatMap((event) => (event.type === 'TOOL_CALL_RESULT' ? [event] : []));
const ledger = async (name: string) =>
  (await stack.owner.query<{ call_id: string }>(`SELECT call_id FROM tool_call_ledger WHERE event = 'create.department' AND result::text LIKE $1`, [`%${name}%`])).rows;
const ledgerRows = async () => Number((await stack.owner.query(`SELECT count(*)::int AS n FROM tool_call_ledger`)).rows[0]?.n);
const department = async (name: string) => (await stack.owner.query(`SELECT id FROM departments WHERE name = $1`, [name])).rows;
/** Everything a request told the model, as one string: system prompt, messages, tool results. */
const told = (request: RecordedRequest | undefined) => JSON.stringify(request?.body ?? {});
const toolNamesOf = (request: RecordedRequest | undefined): string[] => {
  const tools = ((request?.body as { tools?: { name?: string; function?: { name: string } }[] }) ?? {}).tools ?? [];
  return tools.map((tool) => tool.function?.name ?? tool.name ?? '');
};

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

const workerFor = (provider: string, baseUrl: string, extra: Record<string, string> = {}) =>
  stack.startWorker({
    AGENT_MODEL: `${provider}:sim`,
    AGENT_MODEL_BASE_URL: baseUrl,
    // One retry keeps the failure cases short; the retry itself is what the 429 case shows.
    AGENT_MODEL_MAX_RETRIES: '1',
    AGENT_MODEL_TIMEOUT_MS: '10000',
    ...extra,
  });

beforeAll(async () => {
  sim = await startModelSimulator();
  stack = await createTestStack({ name: 'models' });
  await stack.startServer();
  token = await stack.login('admin@greenhill.school');
}, 120_000);

afterAll(async () => {
  await stack?.teardown();
  await sim?.close();
});

const PROVIDERS = [
  // Anthropic's package repairs truncated JSON into arguments; only text that is no JSON at all stays malformed there.
  { provider: 'openai', base: () => `${sim.url}/v1`, malformed: '{"name": "Scien', system: (request?: RecordedRequest) => JSON.stringify((request?.body as { messages?: unknown[] })?.messages?.[0]) },
  { provider: 'anthropic', base: () => sim.url, malformed: 'name is Sciences', system: (request?: RecordedRequest) => JSON.stringify((request?.body as { system?: unknown })?.system) },
] as const;

describe.each(PROVIDERS)('a real provider package ($provider) through the model simulator and the hop', ({ provider, base, malformed, system }) => {
  let worker: BuiltProcess;
  beforeAll(async () => {
    worker = await workerFor(provider, base());
  }, 90_000);
  afterAll(async () => {
    await worker?.stop();
  });

  it('a plain reply streams in pieces; the run finishes with the tokens the provider reported', async () => {
    const { events, requests } = await converse([{ kind: 'text', text: 'Good morning from the model.', chunks: 4, usage: { inputTokens: 321, outputTokens: 9 } }]);
    expect(events.filter((event) => event.type === 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThanOrEqual(2);
    expect(textOf(events)).toBe('Good morning from the model.');
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' }, metadata: { usage: { inputTokens: 321, outputTokens: 9 } } });
    expect(requests).toHaveLength(1);
  });

  it('a tool call crosses the hop: the model was told the prompt and tools, the write has one ledger and audit row, and the next request holds its result', async () => {
    const name = `Robotics ${provider}`;
    const { events, requests } = await converse([
      { kind: 'tool_calls', calls: [{ name: 'create_department', arguments: { name } }], chunks: 5 },
      { kind: 'text', text: `Created ${name}.` },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    // What the model was told: Rover's system prompt, the user's message, the tools with their schemas.
    expect(system(requests[0])).toContain('Rover');
    expect(told(requests[0])).toContain('please help');
    expect(toolNamesOf(requests[0])).toEqual(expect.arrayContaining(['create_department', 'list_departments']));
    // Arguments streamed in fragments that join to the call's JSON.
    const args = events.filter((event) => event.type === 'TOOL_CALL_ARGS');
    expect(args.length).toBeGreaterThan(1);
    expect(JSON.parse(args.map((event) => (event.type === 'TOOL_CALL_ARGS' ? event.delta : '')).join(''))).toEqual({ name });
    // What crossed: one ledger row, one audit row, the department.
    const rows = await ledger(name);
    expect(rows).toHaveLength(1);
    expect(await department(name)).toHaveLength(1);
    const audits = await stack.owner.query(`SELECT count(*)::int AS n FROM audit_log WHERE resource_type = 'department' AND source = 'agent' AND created_at > now() - interval '1 minute'`);
    expect(audits.rows[0]?.n).toBeGreaterThanOrEqual(1);
    // The tool's result went back to the model in its next request.
    expect(told(requests[1])).toContain(name);
    expect(told(requests[1])).toContain('scopeContext');
  });

  it('parallel tool calls each cross with their own call id and get their own ledger row', async () => {
    const [first, second] = [`Drama ${provider}`, `Music ${provider}`];
    const { events } = await converse([
      { kind: 'tool_calls', calls: [{ name: 'create_department', arguments: { name: first } }, { name: 'create_department', arguments: { name: second } }] },
      { kind: 'text', text: 'Both created.' },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    const rows = [...(await ledger(first)), ...(await ledger(second))];
    expect(rows).toHaveLength(2);
    expect(new Set(rows.map((row) => row.call_id)).size).toBe(2);
    expect(resultsOf(events)).toHaveLength(2);
  });

  it.each([
    ['malformed JSON arguments', 'malformed', 'were not valid JSON, so it was not run'],
    ['an unknown tool', 'unknown', 'drop_all_tables is not a valid tool'],
    ['arguments the schema refuses', 'refused', "do not match the tool's schema, so it was not run"],
  ] as const)('%s: nothing crosses the hop, and the model is told in a tool result', async (_what, kind, sentence) => {
    const turn: TurnInput =
      kind === 'malformed'
        ? { kind: 'malformed_tool_call', name: 'create_department', rawArguments: malformed }
        : kind === 'unknown'
          ? { kind: 'unknown_tool', name: 'drop_all_tables' }
          : { kind: 'tool_calls', calls: [{ name: 'create_department', arguments: { name: 'Sciences Two', schoolId: '00000000-0000-4000-8000-000000000000' } }] };
    const before = await ledgerRows();
    const { events, requests } = await converse([turn, { kind: 'text', text: 'Sorry about that.' }]);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(await ledgerRows()).toBe(before);
    expect(resultsOf(events)[0]?.content).toContain(sentence);
    expect(told(requests[1])).toContain(sentence.replaceAll('"', '\\"'));
    expect(textOf(events)).toBe('Sorry about that.');
  });

  it('a refusal is reported honestly: the user reads that the model declined', async () => {
    const { events } = await converse([{ kind: 'refusal', text: 'I cannot help with that request.' }]);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
    expect(textOf(events)).toBe(provider === 'openai' ? DECLINED_REPLY : 'I cannot help with that request.');
  });

  it('a 429 with retry-after is asked again after the wait, and the run succeeds', async () => {
    const started = Date.now();
    const { events, requests } = await converse([{ kind: 'rate_limit', retryAfterSeconds: 1 }, { kind: 'text', text: 'After the wait.' }]);
    expect(textOf(events)).toBe('After the wait.');
    expect(requests).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
  });

  it('a 500 past the retries ends the run with RUN_ERROR MODEL_FAILED and its plain sentence, never the provider text', async () => {
    const { events, requests } = await converse([
      { kind: 'server_error', message: 'internal trace at models.internal:8443' },
      { kind: 'server_error', message: 'internal trace at models.internal:8443' },
    ]);
    expect(requests).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_FAILED', message: ERROR_SENTENCES.MODEL_FAILED });
    expect(JSON.stringify(events)).not.toContain('models.internal');
  });

  it('a stream dropped mid-reply ends the run with RUN_ERROR MODEL_UNREACHABLE', async () => {
    const { events } = await converse([{ kind: 'drop', text: 'Half an ans', chunks: 2 }]);
    expect(events.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_UNREACHABLE', message: ERROR_SENTENCES.MODEL_UNREACHABLE });
  });

  it('a slow first token still streams: the reply arrives whole after the wait', async () => {
    const { events } = await converse([{ kind: 'text', text: 'Worth the wait.', delayMs: 1_500 }]);
    expect(textOf(events)).toBe('Worth the wait.');
    expect(events.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'success' } });
  });
});

describe('an unreachable model server', () => {
  it('/ready says the model is down, a run ends RUN_ERROR MODEL_UNREACHABLE, the worker keeps running, and the next run succeeds once the server is back', async () => {
    const [modelPort, healthPort] = [await freePort(), await freePort()];
    const worker = await workerFor('openai', `http://127.0.0.1:${modelPort}/v1`, { WORKER_HEALTH_PORT: String(healthPort) });
    let back: ModelSimulator | undefined;
    try {
      const ready = await fetch(`http://127.0.0.1:${healthPort}/ready`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ ready: false, checks: { broker: { ok: true }, checkpointDatabase: { ok: true }, model: { ok: false, model: 'openai:sim' } } });
      expect((await fetch(`http://127.0.0.1:${healthPort}/health`)).status).toBe(200);

      const { id: threadId } = await api<{ id: string }>('/agent/threads', {});
      const { runId } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message: 'hello' });
      const failed = (await readRunEvents(stack.server().baseUrl, token, { threadId, runId }, { signal: AbortSignal.timeout(40_000) })).map(({ event }) => event);
      expect(failed.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_UNREACHABLE', message: ERROR_SENTENCES.MODEL_UNREACHABLE });
      expect(worker.child.exitCode).toBeNull();

      back = await startModelSimulator({ port: modelPort, script: { turns: [{ kind: 'text', text: 'Back again.' }] } });
      const { runId: next } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message: 'hello again' });
      const events = (await readRunEvents(stack.server().baseUrl, token, { threadId, runId: next }, { signal: AbortSignal.timeout(40_000) })).map(({ event }) => event);
      expect(textOf(events)).toBe('Back again.');
      expect(worker.output()).toContain('The model server for "openai:sim" cannot be reached');
    } finally {
      await worker.stop();
      await back?.close();
    }
  }, 60_000);
});

describe("a school's data choice and daily token budget, decided by the server", () => {
  const GREENHILL = `(SELECT id FROM schools WHERE name = 'Greenhill Academy')`;
  const setGreenhill = (column: 'allowed_models' | 'daily_token_budget', value: unknown) =>
    stack.owner.query(`UPDATE schools SET ${column} = $1 WHERE id = ${GREENHILL}`, [value]);

  const startRun = async (message: string) => {
    const { id: threadId } = await api<{ id: string }>('/agent/threads', {});
    const { runId } = await api<{ runId: string }>(`/agent/threads/${threadId}/runs`, { message });
    return { threadId, runId };
  };
  const eventsOf = async (run: { threadId: string; runId: string }) =>
    (await readRunEvents(stack.server().baseUrl, token, run, { signal: AbortSignal.timeout(40_000) })).map(({ event }) => event);

  it('a school that has not allowed a hosted model gets MODEL_NOT_ALLOWED and the model is sent nothing; once allowed, the same worker runs', async () => {
    // The worker names a hosted model (no AGENT_MODEL_BASE_URL), while the OpenAI client's own variable points it at
    // the simulator: so the simulator's record shows whether anything would have reached the provider.
    const worker = await stack.startWorker({ AGENT_MODEL: 'openai:gpt-4.1', OPENAI_API_KEY: 'sk-test-not-a-key', OPENAI_BASE_URL: `${sim.url}/v1`, AGENT_MODEL_MAX_RETRIES: '0' });
    try {
      await setGreenhill('allowed_models', ['anthropic']);
      sim.reset();
      sim.setScript({ turns: [{ kind: 'text', text: 'This must never be asked for.' }] });
      const refused = await eventsOf(await startRun('list departments'));
      expect(refused.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'MODEL_NOT_ALLOWED', message: ERROR_SENTENCES.MODEL_NOT_ALLOWED });
      expect(sim.requests()).toHaveLength(0);
      expect(refused.some((event) => event.type === 'TEXT_MESSAGE_CONTENT' || event.type === 'TOOL_CALL_START')).toBe(false);

      await setGreenhill('allowed_models', ['openai:gpt-4.1']);
      const allowed = await eventsOf(await startRun('hello'));
      expect(textOf(allowed)).toBe('This must never be asked for.');
      expect(sim.requests()).toHaveLength(1);
    } finally {
      await setGreenhill('allowed_models', null);
      await worker.stop();
    }
  }, 90_000);

  it("a run that crosses the school's daily budget ends after its model call (its tool call does not run), and new runs are refused with the sentence", async () => {
    const worker = await workerFor('openai', `${sim.url}/v1`);
    const name = 'Budget Busting Department';
    try {
      await stack.owner.query(`DELETE FROM school_token_days WHERE school_id = ${GREENHILL}`);
      await setGreenhill('daily_token_budget', 1_000);
      sim.reset();
      sim.setScript({
        turns: [
          { kind: 'tool_calls', calls: [{ name: 'create_department', arguments: { name } }], usage: { inputTokens: 1_200, outputTokens: 20 } },
          { kind: 'text', text: 'Created.' },
        ],
      });
      const ended = await eventsOf(await startRun('create a department'));
      expect(ended.at(-1)).toMatchObject({ type: 'RUN_ERROR', code: 'SCHOOL_TOKEN_BUDGET_SPENT', message: ERROR_SENTENCES.SCHOOL_TOKEN_BUDGET_SPENT });
      expect(sim.requests()).toHaveLength(1);
      expect(await department(name)).toHaveLength(0);
      const day = await stack.owner.query(`SELECT tokens::int AS tokens FROM school_token_days WHERE school_id = ${GREENHILL}`);
      expect(day.rows[0]?.tokens).toBe(1_220);

      const { id: threadId } = await api<{ id: string }>('/agent/threads', {});
      const response = await fetch(`${stack.server().baseUrl}/agent/threads/${threadId}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ message: 'hello' }),
      });
      expect(response.status).toBe(429);
      expect(await response.json()).toMatchObject({ code: 'SCHOOL_TOKEN_BUDGET_SPENT', message: ERROR_SENTENCES.SCHOOL_TOKEN_BUDGET_SPENT });
      expect(sim.requests()).toHaveLength(1);
    } finally {
      await setGreenhill('daily_token_budget', null);
      await stack.owner.query(`DELETE FROM school_token_days WHERE school_id = ${GREENHILL}`);
      await worker.stop();
    }
  }, 90_000);
});
