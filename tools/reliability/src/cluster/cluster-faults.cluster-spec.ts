import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { login } from '@naalya/test-stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FINAL,
  awaitRun,
  departmentsByName,
  reconcile,
  recordRunWrites,
  resolveUnknowns,
  sleep,
  storedEvents,
  unknownShareFailure,
  verdictOf,
  waitFor,
  writePhaseRow,
  type CallOutcome,
  type PhaseRow,
} from '../support/index.js';
import { createClusterStack, type ClusterApp, type ClusterServer, type ClusterStack } from './cluster-stack.js';

// `npm run test:cluster`: the platform on a three-node RabbitMQ cluster (quorum queues) and behind PgBouncer, two
// servers and two workers, while audited conversations run ("create a department called ..." through the server's run
// routes, the worker's scripted model, the hop to a server and back). Mid-run, kill -9 of the quorum leader of the
// tools queue, later of the run-events ingest queue, and SIGKILL of one server; each killed node is started again once
// conversations begun after the kill have finished without it (the survivors must carry the load, not the restart).
// Then it reconciles like the reliability battery: lost = duplicated = ghost = unexpected = 0, every conversation
// finished, each write reported done has exactly one department, audit row and ledger row, at most 1 % of the writes
// end "outcome unknown" (the worker sends an interrupted call again until its deadline), and each that does is
// resolved through get_tool_call_outcome in agreement with the database (recovered).
//
// Sabotage: both workers given RABBITMQ_URL with only the node the tools queue's leader is on (the single-URL client
// every app was before the node lists): when that node dies no conversation can finish until it is back, so the
// phase must fail on progress. The honest one: the servers keep their lists, only the failover of one app is removed.

const ROWS = fileURLToPath(new URL('../../../../tmp/cluster/', import.meta.url));
const PHASE = 'cluster faults';
const EMAIL = 'admin@greenhill.school';
/** Conversations at once: two per worker. */
const LANES = 4;
/** A run the platform does not end within this is counted unfinished. */
const FINISH_WITHIN_MS = 60_000;

type Fault = 'tools-queue leader' | 'run-events leader' | 'server';
type Conversation = { name: string; runId?: string; startedAt: number; status?: string };
type ClusterRow = PhaseRow & { failover: string[]; conversations: number };

const post = async <T>(server: ClusterServer, token: string, path: string, body: unknown): Promise<T> => {
  const response = await fetch(`${server.process.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  if (!response.ok) throw new Error(`${server.label} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
};

const CONNECTED = /Connected to RabbitMQ at \S+ \((.+)\)\.\s*$/;
const DISCONNECTED = /Disconnected from RabbitMQ \((.+?)\): /;

/**
 * An app's failover time for a fault at `killedAt`: how long until every broker connection it lost came back (its
 * "Connected to RabbitMQ at <node> (<connection>)" line), read from its output up to `until` (the node's restart).
 */
export const failoverOf = (app: ClusterApp, killedAt: number, until: number): string => {
  const after = app.lines.filter((entry) => entry.at >= killedAt && entry.at <= until);
  const lost = new Set(after.flatMap((entry) => DISCONNECTED.exec(entry.line)?.[1] ?? []));
  if (lost.size === 0) return `${app.label}: stayed connected (on a surviving node)`;
  let slowest = 0;
  const missing: string[] = [];
  for (const connection of lost) {
    const back = after.find((entry) => CONNECTED.exec(entry.line)?.[1] === connection);
    if (back) slowest = Math.max(slowest, back.at - killedAt);
    else missing.push(connection);
  }
  return missing.length
    ? `${app.label}: NOT back before the node restarted (${missing.join(', ')})`
    : `${app.label}: ${slowest} ms (${lost.size} connection${lost.size > 1 ? 's' : ''} moved)`;
};

export const clusterFaultsPhase = async (
  target: ClusterStack,
  size: { faults: Fault[]; progressWithinMs: number; progress: number },
): Promise<ClusterRow> => {
  const { stack, cluster } = target;
  const owner = stack.owner;
  const started = Date.now();
  const since = new Date((await owner.query<{ now: Date }>('SELECT now()')).rows[0].now);
  const failures: string[] = [];
  const failover: string[] = [];
  const check = (ok: boolean, detail: string) => {
    if (!ok) failures.push(detail);
  };
  const token = await login(target.servers[0].process.baseUrl, EMAIL);
  const tag = randomUUID().slice(0, 8);
  const conversations: Conversation[] = [];
  let driving = true;

  const lane = async (index: number) => {
    while (driving) {
      const alive = target.servers.filter((server) => server.alive);
      const server = alive[(index + conversations.length) % alive.length];
      const conversation: Conversation = { name: `Cluster ${tag} ${conversations.length}`, startedAt: Date.now() };
      conversations.push(conversation);
      server.inFlight += 1;
      try {
        const { id: threadId } = await post<{ id: string }>(server, token, '/agent/threads', {});
        conversation.runId = (await post<{ runId: string }>(server, token, `/agent/threads/${threadId}/runs`, { message: `create a department called ${conversation.name}` })).runId;
      } catch (error) {
        check(false, `a conversation could not start: ${(error as Error).message.slice(0, 160)}`);
      } finally {
        server.inFlight -= 1;
      }
      if (!conversation.runId) {
        await sleep(200);
        continue;
      }
      const ended = await awaitRun(owner, conversation.runId, (row) => FINAL.includes(row.status), FINISH_WITHIN_MS);
      conversation.status = ended?.row.status ?? 'still running';
    }
  };
  const finishedSince = (at: number) => conversations.filter((conversation) => conversation.startedAt >= at && conversation.status === 'finished').length;
  /** Conversations begun after `at` finish while the fault lasts: the survivors carry the load. */
  const progressAfter = async (at: number, what: string) => {
    try {
      const ms = await waitFor(() => finishedSince(at) >= size.progress, size.progressWithinMs, what);
      failover.push(`${what}: ${size.progress} conversations begun after it finished within ${ms} ms`);
    } catch {
      check(false, `${what}: only ${finishedSince(at)} of ${size.progress} conversations begun after it finished within ${size.progressWithinMs / 1000} s`);
      failover.push(`${what}: conversations stalled (${finishedSince(at)} finished within ${size.progressWithinMs / 1000} s)`);
    }
  };
  /** The node leading `queue` now, asked of a node that is up. */
  const leaderOf = async (queue: string, askNode: number) => {
    const found = (await cluster.leaders(askNode, target.vhost)).find((candidate) => candidate.name === queue);
    if (!found) throw new Error(`${queue} is not on the cluster`);
    return cluster.nodeNumber(found.leader);
  };

  const lanes = Array.from({ length: LANES }, (_, index) => lane(index));
  let up = 1;
  try {
    await waitFor(() => finishedSince(started) >= LANES, FINISH_WITHIN_MS, 'the first conversations');
    for (const fault of size.faults) {
      if (fault === 'server') {
        // Out of the rotation first, so no POST is cut half-way; then killed with its runs' calls and events in flight.
        const victim = target.servers[target.servers.length - 1];
        victim.alive = false;
        await waitFor(() => victim.inFlight === 0, 15_000, `${victim.label}'s requests`);
        const killedAt = Date.now();
        await victim.process.stop('SIGKILL');
        await progressAfter(killedAt, `${victim.label} SIGKILLed`);
        continue;
      }
      const node = await leaderOf(fault === 'tools-queue leader' ? target.queues.tools : target.queues.runEvents, up);
      const killedAt = Date.now();
      await cluster.kill(node);
      up = node === 1 ? 2 : 1;
      await progressAfter(killedAt, `kill -9 of ${cluster.nodePrefix}${node} (the ${fault})`);
      const restartAt = Date.now();
      for (const app of [...target.servers.filter((server) => server.alive), ...target.workers]) {
        failover.push(`  ${failoverOf(app, killedAt, restartAt)}`);
      }
      await cluster.start(node);
      failover.push(`  ${cluster.nodePrefix}${node} started again in ${Date.now() - restartAt} ms`);
    }
    await sleep(2_000);
  } finally {
    driving = false;
    await Promise.all(lanes);
  }

  // What the conversations reported against the ledger, the audit log and the departments.
  const outcomes: CallOutcome[] = [];
  const record = (outcome: CallOutcome) => (outcomes.push(outcome), outcome);
  const runIds = conversations.flatMap((conversation) => conversation.runId ?? []);
  await recordRunWrites(record, owner, runIds);
  const effects = departmentsByName(owner);
  const unfinished = conversations.filter((conversation) => conversation.runId && conversation.status !== 'finished');
  check(unfinished.length === 0, `${unfinished.length} of ${runIds.length} conversations did not finish (${unfinished[0]?.status})`);
  // A conversation told its department was created, whatever the ledger says: exactly one department of its name.
  let reportedDone = 0;
  const counted = await effects(conversations.map((conversation) => conversation.name));
  for (const conversation of conversations.filter((candidate) => candidate.runId)) {
    const results = (await storedEvents(owner, conversation.runId as string)).filter((event) => event.payload.type === 'TOOL_CALL_RESULT');
    const done = results.some((event) => event.payload.type === 'TOOL_CALL_RESULT' && !('error' in (JSON.parse(event.payload.content) as object)));
    if (!done) continue;
    reportedDone += 1;
    const departments = counted.get(conversation.name) ?? 0;
    check(departments === 1, `"${conversation.name}" was reported created and has ${departments} departments`);
  }
  check(reportedDone > 0, 'no conversation reported its department created');
  const context = await stack.contextFor(EMAIL);
  const { disagreements } = await resolveUnknowns({ caller: target.caller, context, outcomes, effects });
  for (const disagreement of disagreements) check(false, disagreement);
  const { counts, details } = await reconcile({ owner, outcomes, since, effects });
  const tooManyUnknown = unknownShareFailure(counts, 0.01);
  if (tooManyUnknown) {
    // What the workers' send loops saw, so a failure says which fault left the calls unsettled.
    const sends = target.workers.flatMap((worker) => worker.lines.filter(({ line }) => /Re-sending tool call|failed in transport/.test(line)).map(({ at, line }) => `${worker.label} +${at - started} ms: ${line.slice(0, 240)}`));
    // An unknown no send loop accounts for is one whose result event never reached the run's stored events: name each
    // such call and every line any app wrote about it, so the failure says where the event went.
    const unknownCalls = outcomes.filter((outcome) => outcome.kind === 'unknown').map((outcome) => outcome.callId);
    const about = unknownCalls.flatMap((callId) => [
      `unknown call ${callId}`,
      ...[...target.servers, ...target.workers].flatMap((app) =>
        app.lines.filter(({ line }) => line.includes(callId.slice(0, 16))).map(({ at, line }) => `${app.label} +${at - started} ms: ${line.slice(0, 240)}`),
      ),
    ]);
    // A result event the server refused (its step's epoch superseded, its run no longer running) is the other way one
    // goes missing.
    const refusedEvents = target.servers.flatMap((server) =>
      server.lines.filter(({ line }) => / refused \(the run is /.test(line)).map(({ at, line }) => `${server.label} +${at - started} ms: ${line.slice(0, 240)}`),
    );
    check(false, [tooManyUnknown, ...sends.slice(0, 12), ...about.slice(0, 24), ...refusedEvents.slice(0, 12)].join('\n  '));
  }
  return { ...verdictOf(PHASE, counts, [...failures, ...details], Date.now() - started), failover, conversations: runIds.length };
};

const report = (row: ClusterRow, sabotage?: string) => {
  console.log(`[${row.phase}${sabotage ? `, sabotage: ${sabotage}` : ''}] ${row.verdict} in ${(row.ms / 1000).toFixed(1)} s\n${row.failover.join('\n')}`);
  writePhaseRow(row, { dir: ROWS, ...(sabotage ? { sabotage } : {}) });
};

describe(PHASE, () => {
  let target: ClusterStack;
  beforeAll(async () => {
    target = await createClusterStack();
  });
  afterAll(async () => {
    await target?.teardown();
  });

  it("spreads the quorum queues' leaders over the three nodes (no node leads the whole topology)", async () => {
    const quorum = (await target.cluster.leaders(1, target.vhost)).filter((queue) => queue.type === 'quorum');
    expect(quorum.map((queue) => queue.name)).toEqual(expect.arrayContaining(Object.values(target.queues)));
    expect(new Set(quorum.map((queue) => queue.leader)).size).toBe(3);
  });

  it('kill -9 of the tools queue leader, then of the run-events leader with a server SIGKILLed: every conversation finishes, each write once, unknowns recovered', async () => {
    const row = await clusterFaultsPhase(target, { faults: ['tools-queue leader', 'run-events leader', 'server'], progressWithinMs: 30_000, progress: LANES });
    report(row);
    expect(row.verdict, row.failures.join('\n')).toBe('PASS');
    expect(row.conversations).toBeGreaterThan(LANES * 2);
    // Nothing left behind on the restarted cluster: every call, step and event a fault interrupted was taken and acked.
    const held = async () => {
      const queues = await target.cluster.leaders(1, target.vhost);
      return Object.values(target.queues).map((name) => ({ name, messages: queues.find((queue) => queue.name === name)?.messages ?? -1 }));
    };
    await waitFor(async () => (await held()).every((queue) => queue.messages === 0), 15_000, 'the work queues to drain').catch(() => undefined);
    expect(await held()).toEqual(Object.values(target.queues).map((name) => ({ name, messages: 0 })));
  });

  it('fails with the workers on a single node (no failover to the others)', async () => {
    const node = await (async () => {
      const leaders = await target.cluster.leaders(1, target.vhost);
      return target.cluster.nodeNumber(leaders.find((queue) => queue.name === target.queues.tools)?.leader ?? `${target.cluster.nodePrefix}1@localhost`);
    })();
    for (const worker of target.workers.splice(0)) await worker.process.stop('SIGKILL');
    target.workers.push(await target.startWorker('single-URL worker', [node]));
    const row = await clusterFaultsPhase(target, { faults: ['tools-queue leader'], progressWithinMs: 15_000, progress: 2 });
    report(row, 'workers on a single node');
    expect(row.verdict).toBe('FAIL');
  });
});
