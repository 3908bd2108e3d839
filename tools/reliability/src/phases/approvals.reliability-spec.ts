import { randomUUID } from 'node:crypto';
import {
  RPC_AGENT_TOOLS,
  approveLessonPlanTool,
  assignSubjectTeacherTool,
  canonicalJson,
  createDepartmentTool,
  deleteDepartmentTool,
  requiresConfirmation,
  type AgentRuntimeContext,
  type AgentToolRequest,
  type AnyAgentTool,
} from '@naalya/agent-tools';
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
  type ReliabilityStack,
  type ToolCaller,
} from '../support/index.js';
import { contextCache, failureSampler, queryOf, recordApproval } from './attack-support.js';
import { domainFingerprint, fingerprintChanges } from './domain-fingerprint.js';
import { loadWorld, type SchoolWorld } from './seeded-world.js';

// Approvals: the tools whose every call needs the user's confirmation (requiresConfirmation: delete_department,
// approve_lesson_plan, assign_subject_teacher), each called by its rightful caller on a row that the call would
// really change, without an approval and against approvals that do not fit: for other arguments, by another user,
// expired, declined, for another tool, given in another conversation, or spent on another call id. Approvals are
// written as the server's resume writes them (same table and binding, as the owner: this phase attacks execute()'s
// check, not the conversation that asks). The protection: execute() runs a confirmable tool only with a live approving
// row for exactly that thread (from the verified dispatch token), call id, event, argument hash and user. Every
// misfit must be refused with the confirmation sentence and change nothing (a digest of every domain table, approvals
// aside, before and after); with the matching approval each call has exactly one effect (reconciled against ledger and
// audit, and the row itself checked), and a second delivery of it changes nothing more.
//
// Sabotage: the same server approving every confirmable call itself before execute() (weakened-server.mjs,
// 'auto-approve'): confirmation no longer depends on the user, so the misfits run.

const PHASE = 'approvals';

const MISFITS = ['none', 'other arguments', 'other user', 'expired', 'declined', 'other tool', 'other conversation', 'spent on another call id'] as const;
type Misfit = (typeof MISFITS)[number];

type Target = { tool: AnyAgentTool; args: Record<string, unknown>; effect: () => Promise<boolean> };

/** One row per call that the call, if it ran, would visibly change. */
const targetFactory = (stack: ReliabilityStack, caller: ToolCaller, record: (outcome: CallOutcome) => CallOutcome, school: SchoolWorld, admin: AgentRuntimeContext) => {
  const query = queryOf(stack.owner);
  let counter = 0;
  return async (tool: AnyAgentTool): Promise<Target> => {
    const index = counter++;
    const unique = `${Date.now()}-${index}`;
    if (tool.event === deleteDepartmentTool.event) {
      const name = `Approval target ${unique}`;
      // Recorded without an effect key: its ledger row stands for it, since the matching deletes remove some of these rows.
      const created = record(await caller.send(createDepartmentTool, caller.envelope(createDepartmentTool, { name }, admin)));
      const id = 'data' in created.result ? (created.result.data as { id: string }).id : undefined;
      if (!id) throw new Error(`Could not create a department to delete: ${JSON.stringify(created.result)}`);
      return {
        tool,
        args: { departmentId: id },
        effect: async () => (await query(`SELECT 1 FROM departments WHERE id = $1`, [id])).length === 0,
      };
    }
    if (tool.event === approveLessonPlanTool.event) {
      const [plan] = await query<{ id: string }>(
        `INSERT INTO lesson_plans (school_id, teaching_assignment_id, title, week_of, objectives, created_by)
         VALUES ($1, $2, $3, '2026-04-06', 'Learners can compare fractions.', $4) RETURNING id::text`,
        [school.id, school.taught.id, `Approval target ${unique}`, school.personas.subjectTeacher.id],
      );
      return {
        tool,
        args: { lessonPlanId: plan!.id },
        effect: async () => (await query(`SELECT 1 FROM lesson_plans WHERE id = $1 AND status = 'approved'`, [plan!.id])).length === 1,
      };
    }
    if (tool.event === assignSubjectTeacherTool.event) {
      // An existing (class, subject) assignment on a campus the director of studies may assign on, handed to another
      // teacher: one effect is that pair's teacher changing. Consecutive targets take consecutive pairs, so the ones that
      // must run never share one.
      const pairs = await query<{ classId: string; subjectId: string; teacherId: string }>(
        `SELECT t.class_id::text AS "classId", t.subject_id::text AS "subjectId", t.teacher_id::text AS "teacherId"
           FROM teaching_assignments t JOIN classes c ON c.id = t.class_id
          WHERE t.school_id = $1
            AND NOT EXISTS (SELECT 1 FROM director_of_studies_appointments d WHERE d.user_id = $2 AND d.campus_id IS NOT NULL AND d.campus_id <> c.campus_id)
          ORDER BY t.id`,
        [school.id, school.personas.directorOfStudies.id],
      );
      const pair = pairs[index % Math.max(pairs.length, 1)];
      if (!pair) throw new Error('No teaching assignment to hand to another teacher');
      const staffId = pair.teacherId === school.personas.formTutor.id ? school.personas.teacher.id : school.personas.formTutor.id;
      return {
        tool,
        args: { classId: pair.classId, subjectId: pair.subjectId, staffId },
        effect: async () =>
          (await query(`SELECT 1 FROM teaching_assignments WHERE class_id = $1 AND subject_id = $2 AND teacher_id = $3`, [pair.classId, pair.subjectId, staffId])).length === 1,
      };
    }
    throw new Error(`No approval target for ${tool.name}: add one to approvals.reliability-spec.ts.`);
  };
};

export const approvalsPhase = (target: PhaseTarget, size: { perMisfit: number; matching: number; concurrency: number }): Promise<PhaseRow> =>
  runPhase(PHASE, target, async ({ stack, caller, record, check }) => {
    const contextFor = contextCache(stack);
    const world = await loadWorld(queryOf(stack.owner));
    const [school] = world.schools;
    const admin = await contextFor('admin@greenhill.school');
    const directorOfStudies = await contextFor('dos@greenhill.school');
    const callerOf = (tool: AnyAgentTool) => (tool.event === deleteDepartmentTool.event ? admin : directorOfStudies);
    const otherUserOf = (tool: AnyAgentTool) => (tool.event === deleteDepartmentTool.event ? school.personas.departmentHead.id : school.personas.schoolAdmin.id);
    const tools = RPC_AGENT_TOOLS.filter(requiresConfirmation);
    const newTarget = targetFactory(stack, caller, record, school, admin);

    // Misfits: every target prepared (and its approval written) before the digest, so the digest compares only the calls.
    const misfits: { misfit: Misfit; target: Target; envelope: AgentToolRequest }[] = [];
    for (const tool of tools) {
      for (const misfit of MISFITS) {
        for (let index = 0; index < size.perMisfit; index++) {
          const target = await newTarget(tool);
          const context = misfit === 'other conversation' ? await stack.contextFor(callerOf(tool) === admin ? 'admin@greenhill.school' : 'dos@greenhill.school') : callerOf(tool);
          const envelope = caller.envelope(tool, target.args, callerOf(tool)) as AgentToolRequest;
          const approve = (overrides: Partial<Parameters<typeof recordApproval>[1]> = {}) =>
            recordApproval(stack.owner, { context: callerOf(tool), callId: envelope.meta.callId, tool, args: target.args, ...overrides });
          switch (misfit) {
            case 'none':
              break;
            case 'other arguments':
              await approve({ args: (await newTarget(tool)).args });
              break;
            case 'other user':
              await approve({ userId: otherUserOf(tool) });
              break;
            case 'expired':
              await approve({ expiresInSeconds: -60 });
              break;
            case 'declined':
              await approve({ approved: false });
              break;
            case 'other tool': {
              const other = tools.find((candidate) => candidate.event !== tool.event) as AnyAgentTool;
              await recordApproval(stack.owner, { context: callerOf(tool), callId: envelope.meta.callId, tool: other, args: (await newTarget(other)).args });
              break;
            }
            case 'other conversation':
              await approve({ context });
              break;
            case 'spent on another call id':
              await approve({ callId: randomUUID() });
              break;
          }
          misfits.push({ misfit, target, envelope });
        }
      }
    }
    const matching = await Promise.all(
      tools.flatMap((tool) => Array.from({ length: size.matching }, () => tool)).map(async (tool) => {
        const target = await newTarget(tool);
        const envelope = caller.envelope(tool, target.args, callerOf(tool)) as AgentToolRequest;
        await recordApproval(stack.owner, { context: callerOf(tool), callId: envelope.meta.callId, tool, args: target.args });
        return { target, envelope };
      }),
    );

    const approvalsAside = (fingerprint: Map<string, string>) => (fingerprint.delete('tool_call_approvals'), fingerprint);
    const before = approvalsAside(await domainFingerprint(stack.owner));
    const problems = failureSampler();
    await inParallel(misfits.length, size.concurrency, async (index) => {
      const { misfit, target, envelope } = misfits[index]!;
      const outcome = record(await caller.send(target.tool, envelope));
      const label = `${target.tool.name} with approval: ${misfit}`;
      if (outcome.kind === 'ok') problems.note('ran without a fitting approval', label);
      else if (outcome.code !== 'CONFIRMATION_REQUIRED') problems.note('refused for another reason', `${label} → ${outcome.code}: ${outcome.error?.slice(0, 120)}`);
      if (await target.effect()) problems.note('the row changed', label);
    });
    const changes = fingerprintChanges(before, approvalsAside(await domainFingerprint(stack.owner)));
    check(changes.length === 0, `domain tables changed while every call lacked a fitting approval: ${changes.join(', ')}`);

    await inParallel(matching.length, size.concurrency, async (index) => {
      const { target, envelope } = matching[index]!;
      const first = record(await caller.send(target.tool, envelope));
      // The same call delivered again: the ledger answers it, the approval is not spent twice.
      const again = record(await caller.send(target.tool, envelope));
      const label = `${target.tool.name} with its matching approval`;
      if (first.kind !== 'ok') problems.note('refused despite the matching approval', `${label} → ${first.error?.slice(0, 120)}`);
      if (canonicalJson(again.result) !== canonicalJson(first.result)) {
        problems.note('a second delivery answered differently', `${label}: ${JSON.stringify(first.result).slice(0, 80)} then ${JSON.stringify(again.result).slice(0, 80)}`);
      }
      if (!(await target.effect())) problems.note('the approved change is not there', label);
    });
    for (const line of problems.lines()) check(false, line);
    check(misfits.length === tools.length * MISFITS.length * size.perMisfit, 'not every misfit was tried');
  });

describe(PHASE, () => {
  const target = usePhaseTarget({ timeoutMs: 15_000 });

  it('the confirmable tools are the three the issue names, each with a target here', () => {
    expect(RPC_AGENT_TOOLS.filter(requiresConfirmation).map((tool) => tool.name).sort()).toEqual(['approve_lesson_plan', 'assign_subject_teacher', 'delete_department']);
  });

  it(`${MISFITS.length} kinds of missing or misfit approval × 10 per confirmable tool refused with nothing changed; matching approvals one effect each`, async () => {
    const row = await approvalsPhase(target, { perMisfit: 10, matching: 10, concurrency: 8 });
    expectPassed(row);
  });

  it('fails with the server approving confirmable calls itself', async () => {
    await restartWeakened(target.stack, 'auto-approve');
    const row = await approvalsPhase(target, { perMisfit: 1, matching: 1, concurrency: 4 });
    expectCaught(row, 'confirmation not required (auto-approve)');
    expect(row.failures.join('\n')).toMatch(/ran without a fitting approval/);
  });
});
