import { listDepartmentsTool, type AgentRuntimeContext, type AgentToolRequest } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import {
  expectCaught,
  expectPassed,
  restartWeakened,
  runPhase,
  sleep,
  usePhaseTarget,
  type CallOutcome,
  type PhaseRow,
  type PhaseTarget,
} from '../support/index.js';
import { contextCache, openWireSender } from './attack-support.js';

// Flood isolation: one school floods (many times its per-minute allowance, from two users, at high concurrency) while
// another school keeps a steady load well inside its own. The server runs with small quotas (configuration, as an
// operator would set them). The protection: per-school and per-user quotas counted in the server's memory after the
// dispatch token is verified, refusing over-quota calls before any database work with a sentence the model can act
// on. The steady school's p99 latency during the flood must stay within 3 times its p99 just before it, measured in
// the same run; every flood call past the allowance must get a quota sentence, and no more flood calls may run than
// the school's allowance; the steady school must never be refused.
//
// Sabotage: the same server with the quota replaced by one that lets every call through (weakened-server.mjs,
// 'no-quota'). The flood then runs in full: past the allowance nobody is told to wait.

const PHASE = 'flood isolation';

/** Small limits for this phase only; the steady school stays far inside them. */
export const FLOOD_QUOTAS = { TOOL_CALLS_PER_MINUTE_PER_SCHOOL: '400', TOOL_CALLS_PER_MINUTE_PER_USER: '250' };

export type FloodSize = {
  /** How long each window (baseline, then flood) lasts. */
  windowMs: number;
  /** Calls per second of each steady user. */
  steadyRate: number;
  /**
   * Flood lanes (calls in flight at once), each sending its next call once the last is answered, at most `floodLaneRate`
   * a second: far above any per-minute allowance, yet not so fast that this process, which also times the steady
   * school's calls, becomes what is measured.
   */
  floodLanes: number;
  floodLaneRate: number;
};

const p99 = (samples: number[]): number => {
  const sorted = [...samples].sort((left, right) => left - right);
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)] ?? Number.NaN;
};

/** Calls `call` every 1000/rate ms until `until()` (each on its own, not waiting for the previous one); resolves when all answered. */
const paced = async (rate: number, until: () => boolean, call: () => Promise<unknown>): Promise<void> => {
  const inFlight: Promise<unknown>[] = [];
  const period = 1000 / rate;
  for (let next = Date.now(); !until(); next += period) {
    inFlight.push(call());
    await sleep(Math.max(0, next + period - Date.now()));
  }
  await Promise.all(inFlight);
};

export const floodIsolationPhase = (target: PhaseTarget, size: FloodSize): Promise<PhaseRow> =>
  runPhase(PHASE, target, async ({ stack, caller, record, check }) => {
    const contextFor = contextCache(stack);
    const steadyUsers = [await contextFor('admin@lakeside.school'), await contextFor('teacher@lakeside.school')];
    const floodUsers = [await contextFor('admin@greenhill.school'), await contextFor('teacher@greenhill.school')];
    const schoolQuota = Number(stack.env['TOOL_CALLS_PER_MINUTE_PER_SCHOOL'] ?? FLOOD_QUOTAS.TOOL_CALLS_PER_MINUTE_PER_SCHOOL);

    // The steady school through the worker's own client; the flood as the same bytes on the wire (packet, user_id,
    // direct reply-to) from a lighter publisher: the flood must load the server, not this process, whose event loop
    // also times the steady school's calls.
    const steady = (context: AgentRuntimeContext, samples: CallOutcome[]) => async () =>
      samples.push(record(await caller.send(listDepartmentsTool, caller.envelope(listDepartmentsTool, {}, context))));
    const wire = await openWireSender(stack);
    const floodCall = async (context: AgentRuntimeContext) => record(await wire.send(listDepartmentsTool, caller.envelope(listDepartmentsTool, {}, context) as AgentToolRequest));
    const steadyWindow = async (during?: Promise<unknown>) => {
      const samples: CallOutcome[] = [];
      const ends = Date.now() + size.windowMs;
      await Promise.all([...steadyUsers.map((context) => paced(size.steadyRate, () => Date.now() >= ends, steady(context, samples))), during]);
      return samples;
    };

    const baseline = await steadyWindow();
    // Quotas count in fixed minutes on the clock: the flood and the window after it (at most 5 s + windowMs) must fall
    // in one minute, or the flood would be given two minutes' allowance and "ran <= quota" would not hold.
    const leftInMinute = 60_000 - (Date.now() % 60_000);
    if (leftInMinute < size.windowMs + 8_000) await sleep(leftInMinute + 100);
    const flood: CallOutcome[] = [];
    let flooding = true;
    const floodDone = Promise.all(
      Array.from({ length: size.floodLanes }, async (_, lane) => {
        while (flooding) {
          const started = Date.now();
          // Three lanes in four are one user's: they spend the per-user allowance while the school's lasts.
          flood.push(await floodCall(floodUsers[lane % 4 === 3 ? 1 : 0]!));
          await sleep(Math.max(0, 1000 / size.floodLaneRate - (Date.now() - started)));
        }
      }),
    );
    // The steady window opens once the flooding school has spent its minute's allowance (it floods on regardless): what
    // the quota promises is that calls past the allowance cost the other schools nothing, and the allowance itself is
    // load any school may bring. Without a quota (the sabotage) that moment never comes; the window opens after 5 s.
    for (const opens = Date.now() + 5_000; Date.now() < opens && !flood.some((outcome) => outcome.code === 'SCHOOL_QUOTA_EXCEEDED'); ) await sleep(100);
    const during = await steadyWindow();
    flooding = false;
    await floodDone;
    await wire.close();

    const [before, underFlood] = [p99(baseline.map((sample) => sample.ms)), p99(during.map((sample) => sample.ms))];
    check(
      underFlood <= 3 * before,
      `the steady school's p99 rose from ${before} ms to ${underFlood} ms under the flood (more than 3 times; ${baseline.length} and ${during.length} samples)`,
    );
    const steadyRefused = [...baseline, ...during].filter((sample) => sample.kind !== 'ok');
    check(steadyRefused.length === 0, `${steadyRefused.length} calls of the steady school were not answered, e.g. ${steadyRefused[0]?.error?.slice(0, 120)}`);

    const overQuota = (outcome: CallOutcome) => outcome.code === 'SCHOOL_QUOTA_EXCEEDED' || outcome.code === 'USER_QUOTA_EXCEEDED';
    const ran = flood.filter((outcome) => outcome.kind === 'ok').length;
    const told = flood.filter(overQuota).length;
    const other = flood.filter((outcome) => outcome.kind !== 'ok' && !overQuota(outcome));
    check(flood.length >= 5 * schoolQuota, `the flood sent ${flood.length} calls, not well above the school's ${schoolQuota} a minute`);
    check(ran <= schoolQuota, `${ran} flood calls ran, more than the school's allowance of ${schoolQuota} a minute`);
    check(told === flood.length - ran, `${flood.length - ran - told} flood calls past the allowance did not get the quota sentence`);
    check(other.length === 0, `${other.length} flood calls failed otherwise, e.g. ${other[0]?.error?.slice(0, 120)}`);
    check(
      flood.some((outcome) => outcome.code === 'USER_QUOTA_EXCEEDED') && flood.some((outcome) => outcome.code === 'SCHOOL_QUOTA_EXCEEDED'),
      'the flood did not meet both the per-user and the per-school limit',
    );
    console.info(
      `${PHASE}: steady p99 ${before} ms before, ${underFlood} ms during (${baseline.length}/${during.length} samples); flood ${flood.length} calls, ${ran} ran, ${told} told to wait`,
    );
  });

describe(PHASE, () => {
  const size: FloodSize = { windowMs: 12_000, steadyRate: 7, floodLanes: 16, floodLaneRate: 10 };
  const target = usePhaseTarget({ timeoutMs: 15_000, stack: { serverEnv: FLOOD_QUOTAS } });

  it('one school floods past its quotas: told to wait with the quota sentence, the other school\'s p99 stays within 3 times its baseline', async () => {
    const row = await floodIsolationPhase(target, size);
    expectPassed(row);
  });

  it('fails with the quotas switched off', async () => {
    await restartWeakened(target.stack, 'no-quota');
    const row = await floodIsolationPhase(target, { ...size, windowMs: 6_000 });
    expectCaught(row, 'no per-school or per-user quota');
    expect(row.failures.join('\n')).toMatch(/flood calls ran, more than the school's allowance/);
  });
});
