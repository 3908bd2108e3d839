import { RPC_AGENT_TOOLS, type AgentToolRequest } from '@naalya/agent-tools';
import { describe, expect, it } from 'vitest';
import {
  expectCaught,
  expectPassed,
  inParallel,
  restartWeakened,
  runPhase,
  usePhaseTarget,
  type PhaseRow,
  type PhaseTarget,
} from '../support/index.js';
import { injectionsFor } from './arg-injection.payloads.js';
import { contextCache, emailOf, failureSampler, markerEffects, queryOf } from './attack-support.js';
import { domainFingerprint, fingerprintChanges } from './domain-fingerprint.js';
import { loadWorld } from './seeded-world.js';
import { withOwnKey } from './tool-args.js';
import { templateFor, toolsWithoutTemplate } from './tool-calls.js';

// Identity and campus injection through arguments, for every tool of RPC_AGENT_TOOLS: the rightful caller's own valid
// call with one key added that claims another user, school, campus, role or scope, or reaches for the prototype
// (arg-injection.payloads.ts: 22 keys, two values each, and five identity keys inside an array element where the tool
// takes one). The envelope is sent as built, past the worker's own schema check, because the server must not trust
// the worker to have filtered anything. The protection: the strict zod schema of each tool (z.strictObject, shared by
// worker and server) refuses every key it does not publish before anything runs. Every injection must be refused with
// an "Invalid tool arguments" error naming the key, and change nothing (reconciled per call, and a digest of every
// domain table before and after).
//
// Sabotage: the same server with every tool schema made lenient in place (weakened-server.mjs, 'lenient-schemas':
// unknown keys stripped instead of refused). The injected keys then vanish silently and the calls run, which is what
// the phase refuses to accept: an argument the contract does not publish must never be quietly ignored.

const PHASE = 'arg injection';

/** The arguments whose text a write leaves in its row, found again by markerEffects. */
const MARKER_KEYS = ['name', 'title', 'motto'] as const;

export const argInjectionPhase = (target: PhaseTarget, size: { concurrency: number; perTool?: number }): Promise<PhaseRow> =>
  runPhase(
    PHASE,
    target,
    async ({ stack, caller, record, check }) => {
      const contextFor = contextCache(stack);
      const world = await loadWorld(queryOf(stack.owner));
      const [greenhill, lakeside] = world.schools;
      let counter = 0;
      const injections = RPC_AGENT_TOOLS.flatMap((tool, index) => {
        // Half the tools from each school, so both schools' callers inject the other's ids.
        const [own, other] = index % 2 === 0 ? [greenhill, lakeside] : [lakeside, greenhill];
        const template = templateFor(tool, own, `inj-${counter++}`);
        const all = injectionsFor(tool, template.args, {
          otherSchoolId: other.id,
          otherSchoolAdminId: other.personas.schoolAdmin.id,
          platformAdminId: world.platformAdmin.id,
          sameSchoolOtherUserId: own.personas.registrar.id,
          otherSchoolCampusId: other.campuses[0]?.id ?? other.id,
        }).map((injection) => ({
          ...injection,
          // Each injection its own marker, so a write that wrongly ran is counted as its own effect, not a duplicate.
          args: MARKER_KEYS.reduce(
            (args, key) => (typeof args[key] === 'string' ? withOwnKey(args, key, `${args[key]} ${counter++}`) : args),
            injection.args,
          ),
          email: emailOf(own, template.persona),
        }));
        return size.perTool ? all.slice(0, size.perTool) : all;
      });
      for (const injection of injections) await contextFor(injection.email);

      const before = await domainFingerprint(stack.owner);
      const problems = failureSampler();
      await inParallel(injections.length, size.concurrency, async (index) => {
        const injection = injections[index]!;
        const context = await contextFor(injection.email);
        const envelope = caller.envelope(injection.tool, injection.args, context) as AgentToolRequest;
        const marker = MARKER_KEYS.map((key) => injection.args[key]).find((value): value is string => typeof value === 'string');
        const outcome = record({ ...(await caller.send(injection.tool, envelope)), ...(marker ? { effectKey: marker } : {}) });
        const label = `${injection.tool.name} with ${injection.key} in ${injection.where}`;
        if (outcome.kind === 'ok') problems.note('an injected key was accepted and the call ran', label);
        else if (outcome.code !== 'INVALID_ARGUMENTS' || !outcome.error?.includes(JSON.stringify(injection.key))) {
          problems.note('not refused by the schema with the key named', `${label} → ${outcome.error?.slice(0, 120) ?? outcome.kind}`);
        }
      });
      for (const line of problems.lines()) check(false, line);
      const changes = fingerprintChanges(before, await domainFingerprint(stack.owner));
      check(changes.length === 0, `domain tables changed during the injections: ${changes.join(', ')}`);
      const perTool = new Map<string, number>();
      for (const injection of injections) perTool.set(injection.tool.name, (perTool.get(injection.tool.name) ?? 0) + 1);
      const minimum = size.perTool ?? 40;
      const thin = RPC_AGENT_TOOLS.filter((tool) => (perTool.get(tool.name) ?? 0) < minimum).map((tool) => tool.name);
      check(thin.length === 0, `tools with fewer than ${minimum} injections: ${thin.join(', ')}`);
    },
    { effects: markerEffects(target.stack.owner) },
  );

describe(PHASE, () => {
  const target = usePhaseTarget({ timeoutMs: 15_000 });

  it('every tool has a call to inject into', () => {
    expect(toolsWithoutTemplate(RPC_AGENT_TOOLS)).toEqual([]);
  });

  it('at least 40 injections into every tool: each refused by its strict schema naming the key, nothing runs', async () => {
    const row = await argInjectionPhase(target, { concurrency: 16 });
    expectPassed(row);
    expect(row.calls).toBeGreaterThanOrEqual(40 * RPC_AGENT_TOOLS.length);
  });

  it('fails with lenient tool schemas (unknown keys stripped instead of refused)', async () => {
    await restartWeakened(target.stack, 'lenient-schemas');
    const row = await argInjectionPhase(target, { concurrency: 8, perTool: 3 });
    expectCaught(row, 'tool schemas strip unknown keys');
    expect(row.failures.join('\n')).toMatch(/accepted and the call ran/);
  });
});
