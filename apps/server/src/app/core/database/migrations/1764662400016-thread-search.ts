import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * GET /agent/threads pages and searches one owner's threads.
 * - Keyset order is (updated_at DESC, id DESC) per owner: the owner index gains id so a cursor's tie-break is in it.
 * - Search matches thread titles and the user's messages (agent_runs.message, one row per message the user sent).
 *   Full-text GIN indexes on the 'simple' configuration (no stemming or stop words, so any word a user typed matches
 *   as typed): pg_trgm would also serve substrings, but it is an extension the migrations would have to create, and
 *   the migration role is not guaranteed the right to; tsvector is built in.
 */
export class ThreadSearch1764662400016 implements MigrationInterface {
  name = 'ThreadSearch1764662400016';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP INDEX ix_agent_threads_owner_updated;
      CREATE INDEX ix_agent_threads_owner_updated_id ON agent_threads (owner_id, updated_at DESC, id DESC);
      CREATE INDEX ix_agent_threads_title_search ON agent_threads USING gin (to_tsvector('simple', coalesce(title, '')));
      CREATE INDEX ix_agent_runs_message_search ON agent_runs USING gin (to_tsvector('simple', message));
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP INDEX ix_agent_runs_message_search;
      DROP INDEX ix_agent_threads_title_search;
      DROP INDEX ix_agent_threads_owner_updated_id;
      CREATE INDEX ix_agent_threads_owner_updated ON agent_threads (owner_id, updated_at DESC);
    `);
  }
}
