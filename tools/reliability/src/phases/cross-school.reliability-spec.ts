import { randomUUID } from 'node:crypto';
import { RPC_AGENT_TOOLS, createDepartmentTool, requiresConfirmation, type AgentRuntimeContext, type AgentToolRequest } from '@naalya/agent-tools';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  expectCaught,
  expectPassed,
  inParallel,
  restartWeakened,
  runPhase,
  usePhaseTarget,
  type CallOutcome,
  type PhaseRow,
  type PhaseTarget,
  type ToolCaller,
} from '../support/index.js';
import { contextCache, emailOf, failureSampler, markerEffects, openWireSender, queryOf, recordApproval } from './attack-support.js';
import { crossSchoolAttempt, idKeysWithoutPool, idTakingTools, otherCampusOf, type Attempt } from './cross-school.arbitraries.js';
import { domainFingerprint, fingerprintChanges } from './domain-fingerprint.js';
import { everyIdOfCampus, everyIdOfSchool, leakedIds, loadWorld, type World } from './seeded-world.js';
import { toolsWithoutTemplate } from './tool-calls.js';

// Cross-school attempts: at least 10,000 calls generated with fast-check over every id-taking tool (every tool of
// RPC_AGENT_TOOLS with an argument named like an id, read from its schema), each the rightful caller's own call with
// one or more of its ids swapped for ids of the other school (or, for a chat pinned to a campus, of the other campus),
// plus platform administrators writing into one school with the other's ids. Confirmable tools get the user's
// approval of exactly those arguments first, so what refuses them is tenant isolation, not the missing approval.
// The protection: the tenant frame and row-level security under every id the server resolves (a foreign id reads as
// not found), campus pinning, and composite keys onto (school_id, id). Every attempt must be refused or answer with
// nothing of the other school or campus (no id of theirs anywhere in the reply); no write naming another school's row
// may run at all (it could only have ignored that id); and the other school's rows must be exactly as they were (a
// digest of every tenant row of that school before and after each half of the run). In a chat pinned to a campus a
// write may run: the pinned campus wins over the model's, and the reply shows it landed there.
//
// Sabotage: the same server connected to PostgreSQL as the owner, a superuser row-level security does not apply to
// (weakened-server.mjs, 'rls-bypassed'; the startup check that refuses such a role is skipped there). The services
// resolve ids through the tenant frame's connection and rely on the policies to hide other schools' rows, so foreign
// ids then resolve.

const PHASE = 'cross-school';

export type CrossSchoolSize = { attempts: number; seed: number; concurrency: number };

/** Ledger rows in both schools, so get_tool_call_outcome has the other school's call ids to reach for. */
const seedLedger = async (caller: ToolCaller, record: (outcome: CallOutcome) => CallOutcome, contexts: AgentRuntimeContext[]) => {
  for (const context of contexts) {
    const name = `Ledger seed ${randomUUID().slice(0, 8)}`;
    record({ ...(await caller.send(createDepartmentTool, caller.envelope(createDepartmentTool, { name }, context))), effectKey: name });
  }
};

export const crossSchoolPhase = (target: PhaseTarget, size: CrossSchoolSize): Promise<PhaseRow> =>
  runPhase(
    PHASE,
    target,
    async ({ stack, caller, record, check, add }) => {
      const contextFor = contextCache(stack);
      await seedLedger(caller, record, [await contextFor('admin@greenhill.school'), await contextFor('admin@lakeside.school')]);
      const world: World = await loadWorld(queryOf(stack.owner));
      const tools = idTakingTools(RPC_AGENT_TOOLS);

      let counter = 0;
      const unique = () => `${size.seed}-${counter++}`;
      const attempts = fc
        .sample(crossSchoolAttempt(world, tools, unique).filter((attempt): attempt is Attempt => attempt !== null), { numRuns: size.attempts, seed: size.seed })
        // Callers of the first school, then of the second: each half leaves the other school's rows to be compared.
        .sort((left, right) => left.school - right.school);

      const contextOf = (attempt: Attempt) => {
        const school = world.schools[attempt.school];
        if (attempt.persona === 'platformAdmin') return contextFor('platform@naalya.school', { targetSchoolId: school.id });
        const email = emailOf(school, attempt.persona);
        return attempt.mode === 'campus' ? contextFor(email, { campusId: school.campuses[attempt.pinnedCampus ?? 0]!.id }) : contextFor(email);
      };
      // Minted before the digests: logging in and opening runs are not effects of the attempts.
      for (const attempt of attempts) await contextOf(attempt);

      const problems = failureSampler();
      const perTool = new Map<string, number>();
      // Ten thousand calls through Nest's client would make this process the bottleneck; the wire is the same.
      const wire = await openWireSender(stack);
      for (const school of [0, 1] as const) {
        const half = attempts.filter((attempt) => attempt.school === school);
        const victim = world.schools[school === 0 ? 1 : 0];
        // Read per half: the first half's own writes are rows the second half's callers must not see either.
        const victimIds = await everyIdOfSchool(queryOf(stack.owner), victim.id);
        const before = await domainFingerprint(stack.owner, victim.id);
        await inParallel(half.length, size.concurrency, async (index) => {
          const attempt = half[index]!;
          const context = await contextOf(attempt);
          const envelope = caller.envelope(attempt.tool, attempt.args, context) as AgentToolRequest;
          if (requiresConfirmation(attempt.tool)) {
            await recordApproval(stack.owner, { context, callId: envelope.meta.callId, tool: attempt.tool, args: attempt.args });
          }
          const marker = typeof attempt.args['name'] === 'string' ? attempt.args['name'] : typeof attempt.args['title'] === 'string' ? attempt.args['title'] : undefined;
          const outcome = record({ ...(await wire.send(attempt.tool, envelope)), ...(marker ? { effectKey: marker } : {}) });
          perTool.set(attempt.tool.name, (perTool.get(attempt.tool.name) ?? 0) + 1);
          if (outcome.kind !== 'ok') return;
          // A write can only succeed with another school's id in it by ignoring that id: refuse-or-nothing does not cover it.
          if (outcome.mutating && attempt.mode !== 'campus') {
            problems.note('a write naming another school\'s row ran', `${attempt.tool.name} as ${attempt.persona} (${attempt.mode}) with foreign ${attempt.swapped.join(', ')}`);
          }
          const forbidden = attempt.mode === 'campus' ? everyIdOfCampus(otherCampusOf(world, school, attempt.pinnedCampus ?? 0)) : victimIds;
          const leaked = leakedIds(outcome.result, forbidden);
          if (leaked.length) {
            add({ leaked: 1 });
            problems.note(
              `answered with ${attempt.mode === 'campus' ? 'the other campus' : 'the other school'}'s rows`,
              `${attempt.tool.name} as ${attempt.persona} (${attempt.mode}) with foreign ${attempt.swapped.join(', ')} → ${leaked.length} foreign ids`,
            );
          }
        });
        const changes = fingerprintChanges(before, await domainFingerprint(stack.owner, victim.id));
        if (changes.length) add({ unexpected: changes.length }, `${victim.slug}'s rows changed while only the other school's callers reached for them: ${changes.join(', ')}`);
      }
      await wire.close();
      for (const line of problems.lines()) check(false, line);

      check(attempts.length >= size.attempts, `only ${attempts.length} of ${size.attempts} attempts were generated`);
      const floor = Math.floor(size.attempts / tools.length / 4);
      const thin = tools.filter((tool) => (perTool.get(tool.name) ?? 0) < floor).map((tool) => tool.name);
      check(thin.length === 0, `id-taking tools with fewer than ${floor} attempts: ${thin.join(', ')}`);
    },
    { effects: markerEffects(target.stack.owner) },
  );

describe(PHASE, () => {
  const target = usePhaseTarget({ timeoutMs: 15_000 });

  it('every id-taking tool is attacked: it has a call template and every id argument has a pool of rows', () => {
    const tools = idTakingTools(RPC_AGENT_TOOLS);
    expect(tools.length).toBeGreaterThan(10);
    expect(toolsWithoutTemplate(tools)).toEqual([]);
    expect(idKeysWithoutPool(tools)).toEqual([]);
  });

  it('10,000 generated cross-school and cross-campus attempts: refused or nothing of the other school, its rows unchanged', async () => {
    const row = await crossSchoolPhase(target, { attempts: 10_000, seed: 7_101, concurrency: 32 });
    expectPassed(row);
    expect(row.calls).toBeGreaterThanOrEqual(10_000);
  });

  it('fails with row-level security bypassed (the server connected as the database owner)', async () => {
    await restartWeakened(target.stack, 'rls-bypassed');
    const row = await crossSchoolPhase(target, { attempts: 300, seed: 7_102, concurrency: 16 });
    expectCaught(row, 'row-level security bypassed');
    expect(row.leaked + row.unexpected).toBeGreaterThan(0);
  });
});
