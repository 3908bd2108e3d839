import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * AGENT_RUNS_IN_FLIGHT_PER_USER counts a user's agent runs running or queued on every run start: this partial index
 * keeps that count to the user's few live rows, however many finished runs the table holds.
 */
export class PerUserRunLimits1764662400011 implements MigrationInterface {
  name = 'PerUserRunLimits1764662400011';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX ix_agent_runs_owner_in_flight ON agent_runs (owner_id) WHERE kind = 'agent' AND status IN ('running', 'queued')`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX ix_agent_runs_owner_in_flight`);
  }
}
