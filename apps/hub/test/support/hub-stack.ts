import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { AgentRunEvent } from '@naalya/agent-tools';
import { createTestStack, login, type BuiltProcess } from '@naalya/test-stack';

const HUB_INDEX = fileURLToPath(new URL('../../dist/index.html', import.meta.url));
export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';

/** Debian's chromium, installed on first use if it is missing; otherwise a clear message, not a cryptic launch error. */
export const ensureChromium = (): string => {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  const install = spawnSync('sh', ['-c', 'apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium)'], {
    encoding: 'utf8',
    timeout: 240_000,
  });
  if (existsSync(CHROMIUM)) return CHROMIUM;
  throw new Error(
    `The Hub's browser tests need Debian's chromium at ${CHROMIUM} and could not install it (apt-get install -y chromium): ${(install.stderr || install.stdout || String(install.error)).slice(-500)}`,
  );
};

/**
 * The server's run lifecycle, short for the tests: a step no worker renews loses its lease in 10 s, is dispatched once
 * more, and then fails its run (RUN_ABANDONED) about 20 s after it was sent; the sweeper looks twice a second.
 */
export const HUB_RUN_LIFECYCLE = { AGENT_RUN_LEASE_SECONDS: '10', AGENT_RUN_MAX_ATTEMPTS: '2', AGENT_RUN_SWEEP_INTERVAL_MS: '500' } as const;

/** The scripted model's chunks paced, so the page sees a reply arrive in pieces (word by word, arguments in fragments). */
export const HUB_SCRIPTED_STREAM = { AGENT_SCRIPTED_STREAM_DELAY_MS: '30' } as const;

export type HubStack = {
  baseUrl: string;
  /** The REST API as a demo user (for setting up or checking what the browser did): GET, or POST with a body unless `method` says. */
  api: <T>(email: string, path: string, body?: unknown, method?: 'POST' | 'PATCH') => Promise<{ status: number; body: T }>;
  /** The stored events of a run that is not running (its stream ends at once), as a demo user reads them. */
  runEvents: (email: string, threadId: string, runId: string) => Promise<AgentRunEvent[]>;
  /**
   * Freezes the worker process (SIGSTOP): a run sent meanwhile stays running on the server with nobody working on it,
   * which is how the tests hold a run in the running state long enough to stop it, queue behind it, or watch the server
   * give up on it. `thawWorker` (SIGCONT) lets it go on; the steps it then finds were superseded, and it drops them.
   */
  freezeWorker: () => void;
  thawWorker: () => void;
  /** A query as the database owner, for seeding what the demo seed has not (100,000 audit rows) and checking it. */
  sql: <T>(text: string, params?: unknown[]) => Promise<T[]>;
  teardown: () => Promise<void>;
};

/**
 * The built server, which serves the built Hub under /hub/, and the built worker (scripted model), on a stack of their
 * own. `serverEnv`: settings a spec needs beyond HUB_RUN_LIFECYCLE (a short time to answer a question, for one).
 */
export const startHubStack = async (serverEnv: Readonly<Record<string, string>> = {}): Promise<HubStack> => {
  if (!existsSync(HUB_INDEX)) throw new Error(`The Hub is not built (${HUB_INDEX}): run npx nx run-many -t build first.`);
  const stack = await createTestStack({ name: 'hub', env: { ...HUB_RUN_LIFECYCLE, ...serverEnv } });
  let worker: BuiltProcess;
  try {
    await stack.startServer();
    worker = await stack.startWorker({ ...HUB_SCRIPTED_STREAM });
  } catch (error) {
    await stack.teardown();
    throw error;
  }
  const baseUrl = stack.server().baseUrl;

  const tokens = new Map<string, string>();
  const tokenOf = async (email: string) => {
    const token = tokens.get(email) ?? (await login(baseUrl, email));
    tokens.set(email, token);
    return token;
  };
  const api = async <T>(email: string, path: string, body?: unknown, method: 'POST' | 'PATCH' = 'POST') => {
    const response = await fetch(`${baseUrl}${path}`, {
      method: body === undefined ? 'GET' : method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await tokenOf(email)}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as T };
  };

  const runEvents = async (email: string, threadId: string, runId: string) => {
    const response = await fetch(`${baseUrl}/agent/threads/${threadId}/runs/${runId}/events`, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${await tokenOf(email)}` },
      signal: AbortSignal.timeout(10_000),
    });
    const text = await response.text();
    return text
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => JSON.parse(line.slice('data:'.length)) as AgentRunEvent);
  };

  let frozen = false;
  const signalWorker = (signal: NodeJS.Signals) => {
    if (worker.pid !== undefined && worker.child.exitCode === null) process.kill(worker.pid, signal);
  };
  const freezeWorker = () => {
    signalWorker('SIGSTOP');
    frozen = true;
  };
  const thawWorker = () => {
    if (!frozen) return;
    signalWorker('SIGCONT');
    frozen = false;
  };

  const sql = async <T>(text: string, params: unknown[] = []) => (await stack.owner.query(text, params)).rows as T[];

  return { baseUrl, api, runEvents, freezeWorker, thawWorker, sql, teardown: stack.teardown };
};
