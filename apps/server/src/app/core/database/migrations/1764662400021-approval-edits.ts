import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';
import { ACTOR_SETTING as ACTOR, PLATFORM_SETTING as PLATFORM, tenantRowLevelSecurity } from '../row-level-security.js';

/**
 * Approve with edits, and the audit row of a confirmed write pointing at its approval.
 *
 * `tool_call_edits`: one row per edit a person made to a confirmation's arguments at resume (who, when, the arguments
 * the question was about and their hash, the arguments after the edit and their hash, each changed field). It follows
 * tool_call_approvals (CreateToolCallApprovals): tenant rows for staff, school-less rows for a platform admin, bound to
 * the user who edited, gone with their thread. The approval of the edited call (recorded when its second question is
 * answered) carries `edit_id`: the edit whose arguments it approves; the original arguments have no approval.
 *
 * `audit_log.approval_id` and `audit_log.approval`: the approval a confirmed write ran under, and what the Activity
 * page shows of it (who approved, when, their answer, and their edits) copied when the write commits. A copy, because
 * approvals go with their thread while audit rows stay, and because approvals are readable by their own user only.
 * tool_call_approval() now also answers the approval's id and that summary.
 */
export class ApprovalEdits1764662400021 implements MigrationInterface {
  name = 'ApprovalEdits1764662400021';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE tool_call_edits (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid REFERENCES schools (id),
        thread_id uuid NOT NULL,
        run_id uuid NOT NULL,
        interrupt_id text NOT NULL,
        call_id text NOT NULL,
        event text NOT NULL,
        user_id uuid NOT NULL,
        original_args_hash text NOT NULL,
        original_args jsonb NOT NULL,
        edited_args_hash text NOT NULL,
        edited_args jsonb NOT NULL,
        changes jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        -- One edit per question: the edited call is asked about again under a new interrupt.
        CONSTRAINT uq_tool_call_edits_thread_interrupt UNIQUE (thread_id, interrupt_id),
        -- The target of the approval's composite key: a school's approval can only name an edit of the same school.
        CONSTRAINT uq_tool_call_edits_school_id UNIQUE (school_id, id),
        CONSTRAINT fk_tool_call_edits_thread FOREIGN KEY (school_id, thread_id) REFERENCES agent_threads (school_id, id) ON DELETE CASCADE,
        CONSTRAINT fk_tool_call_edits_run FOREIGN KEY (school_id, run_id) REFERENCES agent_runs (school_id, id) ON DELETE CASCADE,
        CONSTRAINT fk_tool_call_edits_user FOREIGN KEY (school_id, user_id) REFERENCES users (school_id, id)
      );
      CREATE INDEX ix_tool_call_edits_call ON tool_call_edits (thread_id, call_id, created_at);
      ${tenantRowLevelSecurity('tool_call_edits')}
      CREATE POLICY tool_call_edits_platform_owner ON tool_call_edits
        USING (school_id IS NULL AND ${PLATFORM} AND user_id = ${ACTOR})
        WITH CHECK (school_id IS NULL AND ${PLATFORM} AND user_id = ${ACTOR});
      CREATE POLICY tool_call_edits_owner ON tool_call_edits AS RESTRICTIVE TO ${APP_GROUP_ROLE}
        USING (user_id = ${ACTOR} OR ${PLATFORM})
        WITH CHECK (user_id = ${ACTOR});
      GRANT SELECT, INSERT ON tool_call_edits TO ${APP_GROUP_ROLE};

      ALTER TABLE tool_call_approvals ADD COLUMN edit_id uuid,
        ADD CONSTRAINT fk_tool_call_approvals_edit FOREIGN KEY (school_id, edit_id) REFERENCES tool_call_edits (school_id, id) ON DELETE CASCADE;
      ALTER TABLE audit_log ADD COLUMN approval_id uuid, ADD COLUMN approval jsonb;
    `);

    // The lookup execute() decides by, now also answering what the audit row keeps of the approval.
    await queryRunner.query(`
      DROP FUNCTION tool_call_approval(uuid, text);
      CREATE FUNCTION tool_call_approval(p_thread_id uuid, p_call_id text)
        RETURNS TABLE (id uuid, event text, args_hash text, user_id uuid, approved boolean, expired boolean, summary jsonb)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ SELECT a.id, a.event, a.args_hash, a.user_id, a.approved, a.expires_at <= now(),
                     jsonb_build_object('approvedById', a.user_id, 'approvedAt', a.created_at, 'answer', a.answer,
                                        'edits', COALESCE(e.changes, '[]'::jsonb))
                FROM public.tool_call_approvals a LEFT JOIN public.tool_call_edits e ON e.id = a.edit_id
               WHERE a.thread_id = p_thread_id AND a.call_id = p_call_id $$;
      REVOKE ALL ON FUNCTION tool_call_approval(uuid, text) FROM PUBLIC;
      CREATE POLICY tool_call_edits_lookup ON tool_call_edits FOR SELECT TO CURRENT_USER USING (true);
      GRANT EXECUTE ON FUNCTION tool_call_approval(uuid, text) TO ${APP_GROUP_ROLE};
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP FUNCTION tool_call_approval(uuid, text);
      CREATE FUNCTION tool_call_approval(p_thread_id uuid, p_call_id text)
        RETURNS TABLE (event text, args_hash text, user_id uuid, approved boolean, expired boolean)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$ SELECT a.event, a.args_hash, a.user_id, a.approved, a.expires_at <= now()
                FROM public.tool_call_approvals a WHERE a.thread_id = p_thread_id AND a.call_id = p_call_id $$;
      REVOKE ALL ON FUNCTION tool_call_approval(uuid, text) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION tool_call_approval(uuid, text) TO ${APP_GROUP_ROLE};
      ALTER TABLE audit_log DROP COLUMN approval_id, DROP COLUMN approval;
      ALTER TABLE tool_call_approvals DROP COLUMN edit_id;
      DROP TABLE tool_call_edits;
    `);
  }
}
