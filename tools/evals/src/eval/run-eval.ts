import type { RunInterrupt, RunStreamEvent } from '@naalya/agent-tools';
import { startModelSimulator, type ModelSimulator } from '@naalya/model-simulator';
import { createTestStack, readRunEvents, type TestStack } from '@naalya/test-stack';
import { scriptedPolicy } from '@naalya/worker/testing';
import { toLangChain, toTurn } from '../wire-messages.js';
import { judge, type AuditRow } from './judge.js';
import { MISBEHAVIOURS } from './misbehaviours.js';
import { emailOf, type ConfirmRule, type Misbehaviour, type Scenario } from './scenario.js';
import { SCENARIOS } from './scenarios.js';
import { buildScorecard, type Expectation, type ScenarioResult, type Scorecard, type Tokens } from './scorecard.js';
import { traceOf } from './trace.js';
import { readWorld, seedEvalData, type World } from './world.js';

/**
 * Runs the scenarios against the platform as processes: a test stack (its own database and queues), the built server,
 * and the built worker on the model under test. With `simulator`, the model is the simulator in this process playing
 * the worker's scripted policy (behaving) or, with `misbehave`, one scripted misbehaviour per category.
 */

export type EvalOptions = {
  /** AGENT_MODEL of the worker: provider:model. */
  model: string;
  /** AGENT_MODEL_BASE_URL; set to the in-process simulator's URL when `simulator` is on. */
  baseUrl?: string;
  simulator: boolean;
  misbehave: boolean;
  expectation: Expectation;
  /** Only these scenario (or misbehaviour) ids. */
  only?: string[];
  log: (line: string) => void;
};

/** Bounds: one scenario's whole run (questions included), and how many pauses it may make. */
const SCENARIO_TIMEOUT_MS = 60_000;
const MAX_PAUSES = 8;

type Case = { scenario: Scenario; misbehaviour?: Misbehaviour };

const post = async <T>(baseUrl: string, token: string, path: string, body: unknown, signal: AbortSignal): Promise<T> => {
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
};

const decide = (rule: ConfirmRule, confirmed: Parameters<Exclude<ConfirmRule, string>>[0], world: World): boolean =>
  typeof rule === 'function' ? rule(confirmed, world) : rule === 'yes';

/** One scenario: a new thread, the message, every question answered as the scenario says, until the run ends. */
const runCase = async (stack: TestStack, world: World, token: string, { scenario, misbehaviour }: Case): Promise<{ events: RunStreamEvent[]; answers: Map<string, string>; latencyMs: number }> => {
  const baseUrl = stack.server().baseUrl;
  const signal = AbortSignal.timeout(SCENARIO_TIMEOUT_MS);
  const message = typeof scenario.message === 'function' ? scenario.message(world) : scenario.message;
  const started = performance.now();
  const { id: threadId } = await post<{ id: string }>(baseUrl, token, '/agent/threads', {}, signal);
  const { runId } = await post<{ runId: string }>(baseUrl, token, `/agent/threads/${threadId}/runs`, { message }, signal);
  const events: RunStreamEvent[] = [];
  const answers = new Map<string, string>();
  const replies = [...(scenario.replies ?? [])];
  let lastEventId: number | undefined;
  for (let pause = 0; pause <= MAX_PAUSES; pause++) {
    const streamed = await readRunEvents(baseUrl, token, { threadId, runId }, { signal, ...(lastEventId ? { lastEventId } : {}) });
    events.push(...streamed.map((item) => item.event));
    lastEventId = streamed.at(-1)?.seq ?? lastEventId;
    const finish = events.at(-1);
    if (finish?.type !== 'RUN_FINISHED' || finish.outcome.type !== 'interrupt') break;
    const calls = traceOf(events).calls;
    for (const interrupt of finish.outcome.interrupts as RunInterrupt[]) {
      const confirmed = calls.find((call) => call.id === interrupt.toolCallId);
      const answer =
        interrupt.reason === 'confirmation'
          ? decide(misbehaviour?.confirm ?? scenario.confirm ?? 'no', confirmed, world)
            ? 'yes'
            : 'no'
          : (replies.shift() ?? 'I have nothing to add; do only what I asked.');
      answers.set(interrupt.id, answer);
      await post(baseUrl, token, `/agent/threads/${threadId}/resume`, { interruptId: interrupt.id, answer }, signal);
    }
  }
  return { events, answers, latencyMs: performance.now() - started };
};

const auditSince = async (world: World, since: Date): Promise<AuditRow[]> =>
  (
    await world.owner.query<{ action: string; resource_type: string; resource_id: string | null }>(
      'SELECT action, resource_type, resource_id FROM audit_log WHERE created_at >= $1 ORDER BY created_at',
      [since],
    )
  ).rows.map((row) => ({ action: row.action, resourceType: row.resource_type, resourceId: row.resource_id }));

const casesOf = (options: EvalOptions): Case[] => {
  const cases: Case[] = options.misbehave ? MISBEHAVIOURS.map((misbehaviour) => ({ scenario: misbehaviour.scenario, misbehaviour })) : SCENARIOS.map((scenario) => ({ scenario }));
  const selected = options.only ? cases.filter((item) => options.only?.includes(item.misbehaviour?.id ?? item.scenario.id)) : cases;
  if (selected.length === 0) throw new Error(`no scenario matches ${options.only?.join(', ')}`);
  return selected;
};

export const runEval = async (options: EvalOptions): Promise<Scorecard> => {
  const cases = casesOf(options);
  const log = options.log;
  let current: Case | undefined;
  let world: World | undefined;
  let simulator: ModelSimulator | undefined;
  let stack: TestStack | undefined;
  try {
    if (options.simulator) {
      // The misbehaving model is the scripted one but where the current scenario's misbehaviour answers instead.
      simulator = await startModelSimulator({
        responder: (request) => {
          const { messages, tools } = toLangChain(request);
          const behave = () => scriptedPolicy(messages, tools);
          const misbehaving = current?.misbehaviour && world ? current.misbehaviour.answer({ messages, tools, world, behave }) : undefined;
          return toTurn(misbehaving ?? behave());
        },
      });
    }
    const baseUrl = simulator ? `${simulator.url}${options.model.startsWith('openai:') ? '/v1' : ''}` : options.baseUrl;
    log(`setting up: a database and queues of the eval's own, the server and the worker on ${options.model}${baseUrl ? ` at ${baseUrl}` : ''}`);
    // Quotas are a flood brake with tests of their own; the eval is not a flood.
    stack = await createTestStack({ name: 'eval', env: { TOOL_CALLS_PER_MINUTE_PER_SCHOOL: '100000', TOOL_CALLS_PER_MINUTE_PER_USER: '100000', LOG_LEVEL: 'error' } });
    await seedEvalData(stack.owner);
    world = await readWorld(stack.owner);
    await stack.startServer();
    await stack.startWorker({ AGENT_MODEL: options.model, AGENT_MODEL_BASE_URL: baseUrl ?? '', LOG_LEVEL: 'log' });

    const tokens = new Map<string, string>();
    const results: ScenarioResult[] = [];
    for (const item of cases) {
      current = item;
      const { scenario, misbehaviour } = item;
      const email = emailOf(scenario.persona, scenario.school);
      const token = tokens.get(email) ?? (await stack.login(email));
      tokens.set(email, token);
      const since = new Date((await stack.owner.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows[0]?.now ?? Date.now());
      const recordedBefore = simulator?.requests().length ?? 0;
      const { events, answers, latencyMs } = await runCase(stack, world, token, item);
      const trace = traceOf(events, answers);
      const verdict = await judge(scenario, trace, await auditSince(world, since), world);
      const simulated = simulator?.requests().slice(recordedBefore).flatMap((request) => (request.usage ? [request.usage] : []));
      const fromSimulator: Tokens | undefined = simulated?.length
        ? { inputTokens: simulated.reduce((sum, usage) => sum + usage.inputTokens, 0), outputTokens: simulated.reduce((sum, usage) => sum + usage.outputTokens, 0) }
        : undefined;
      const message = typeof scenario.message === 'function' ? scenario.message(world) : scenario.message;
      const result: ScenarioResult = {
        id: misbehaviour?.id ?? scenario.id,
        category: scenario.category,
        persona: email,
        message,
        ...(misbehaviour ? { misbehaviour: { id: misbehaviour.id, label: misbehaviour.label, platformStops: misbehaviour.platformStops } } : {}),
        verdict,
        latencyMs,
        ...(trace.usage ?? fromSimulator ? { tokens: trace.usage ?? fromSimulator } : {}),
      };
      results.push(result);
      log(`${verdict.passed ? 'pass' : 'FAIL'}  ${result.id}  (${(latencyMs / 1000).toFixed(1)} s)${verdict.passed ? '' : `: ${verdict.failures.join('; ')}`}`);
    }
    const tokenSource = simulator ? "RUN_FINISHED usage where the server reports it, else the simulator's record" : 'RUN_FINISHED usage';
    const via = simulator ? `the model simulator, ${options.misbehave ? 'misbehaving once per category' : 'behaving (the scripted policy)'}` : baseUrl ? `at ${baseUrl}` : 'the provider';
    return buildScorecard(options.model, via, options.expectation, results, tokenSource);
  } finally {
    await stack?.teardown().catch((error: unknown) => log(`teardown: ${(error as Error).message}`));
    await simulator?.close();
  }
};
