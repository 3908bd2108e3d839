import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Thread search covers what the assistant answered, not only titles and what the user sent (migration 1764662400016).
 *
 * An answer streams as TEXT_MESSAGE_CONTENT deltas, which split words anywhere, so the events themselves cannot be
 * searched. Each run keeps its answers' text whole in `agent_runs.reply`, written by the same UPDATE that moves the run
 * out of `running` (paused on a question, or ended: AgentRunStore.applyState), so a streaming run pays nothing per
 * event. agent_run_reply() joins the run's deltas in order, a line break between messages (specialists' included), cut
 * at 100,000 characters so one long run cannot grow a row or the index without bound. SECURITY INVOKER: it reads the
 * events under the writer's row-level security, as the run's own frame. The GIN index on the 'simple' configuration
 * matches the message index, so the search's one query ORs the two.
 */
export class AssistantReplySearch1764662400019 implements MigrationInterface {
  name = 'AssistantReplySearch1764662400019';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE FUNCTION agent_run_reply(p_run_id uuid) RETURNS text
        LANGUAGE sql STABLE AS $$
          SELECT left(coalesce(string_agg(CASE WHEN type = 'TEXT_MESSAGE_START' THEN E'\\n' ELSE payload->>'delta' END, '' ORDER BY seq), ''), 100000)
            FROM agent_run_events
           WHERE run_id = p_run_id AND type IN ('TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT')
        $$;
      ALTER TABLE agent_runs ADD COLUMN reply text NOT NULL DEFAULT '';
      UPDATE agent_runs SET reply = agent_run_reply(id) WHERE status <> 'running';
      CREATE INDEX ix_agent_runs_reply_search ON agent_runs USING gin (to_tsvector('simple', reply));
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP INDEX ix_agent_runs_reply_search;
      ALTER TABLE agent_runs DROP COLUMN reply;
      DROP FUNCTION agent_run_reply(uuid);
    `);
  }
}
