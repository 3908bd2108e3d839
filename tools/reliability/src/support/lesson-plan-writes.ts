import { createLessonPlanTool, type AgentRuntimeContext } from '@naalya/agent-tools';
import type pg from 'pg';
import type { CallOutcome, ToolCaller } from './caller.js';
import type { EffectProbe } from './reconcile.js';
import type { ReliabilityStack } from './stack.js';

/** Lesson plans per title, read as the owner: the effect a write of lessonPlanWrites() is counted by. */
export const lessonPlansByTitle =
  (owner: pg.Client): EffectProbe =>
  async (titles) => {
    const { rows } = await owner.query<{ title: string; count: string }>(
      `SELECT title, count(*) FROM lesson_plans WHERE title = ANY($1) GROUP BY title`,
      [titles],
    );
    return new Map(rows.map((row) => [row.title, Number(row.count)]));
  };

export type LessonPlanWrites = {
  /** The subject teacher's context: the writes' and their get_tool_call_outcome lookups'. */
  context: AgentRuntimeContext;
  /** Submits one lesson plan with this title (the phase makes it unique) and records its outcome with the title as effect key. */
  write: (title: string) => Promise<CallOutcome>;
};

/**
 * Audited writes whose repeats the domain does not refuse: lesson plans, submitted by the seeded subject teacher on
 * their own teaching assignment. A department's unique name turns a second execution of a create into a refusal (the
 * caller sees a ghost, the table never shows two rows), so a phase whose sabotage is a second execution could only
 * ever catch it indirectly; two lesson plans with one title are a duplicate the reconciler counts as such.
 */
export const lessonPlanWrites = async (
  stack: ReliabilityStack,
  caller: ToolCaller,
  record: (outcome: CallOutcome) => CallOutcome,
): Promise<LessonPlanWrites> => {
  const email = 'subject.teacher@greenhill.school';
  const context = await stack.contextFor(email);
  const { rows } = await stack.owner.query<{ id: string }>(
    `SELECT t.id::text FROM teaching_assignments t JOIN users u ON u.id = t.teacher_id WHERE u.email = $1 ORDER BY t.id LIMIT 1`,
    [email],
  );
  if (!rows[0]) throw new Error(`${email} has no teaching assignment in the seeded school`);
  const teachingAssignmentId = rows[0].id;
  return {
    context,
    write: async (title) =>
      record({
        ...(await caller.call(createLessonPlanTool, { teachingAssignmentId, title, weekOf: '2026-03-30', objectives: 'Learners can simplify ratios.' }, context)),
        effectKey: title,
      }),
  };
};
