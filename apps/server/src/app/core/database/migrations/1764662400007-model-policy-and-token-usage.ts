import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';
import { tenantRowLevelSecurity } from '../row-level-security.js';

/**
 * A school's data choice and its daily token budget, and the tokens runs spend.
 *
 * Schools gain `allowed_models` (NULL: the platform default, AGENT_MODELS_ALLOWED; `{*}`: every model; `{}`: none but
 * the scripted and self-hosted ones) and `daily_token_budget` (NULL: the platform default). The app role may update
 * these two columns only, and only of the school its frame is pinned to (the schools_tenant policy): a platform
 * administrator sets them in the school chosen for the session.
 *
 * Runs gain their input and output tokens, and the tokens of their current step (reset at every dispatch). A school's
 * day (UTC) is one row, upserted by every usage report, so replicas count the same total: the row lock makes
 * concurrent reports add up exactly.
 */
export class ModelPolicyAndTokenUsage1764662400007 implements MigrationInterface {
  name = 'ModelPolicyAndTokenUsage1764662400007';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE schools
        ADD COLUMN allowed_models text[],
        ADD COLUMN daily_token_budget bigint CHECK (daily_token_budget > 0);
      GRANT UPDATE (allowed_models, daily_token_budget) ON schools TO ${APP_GROUP_ROLE};

      ALTER TABLE agent_runs
        ADD COLUMN input_tokens bigint NOT NULL DEFAULT 0,
        ADD COLUMN output_tokens bigint NOT NULL DEFAULT 0,
        ADD COLUMN step_tokens bigint NOT NULL DEFAULT 0;

      CREATE TABLE school_token_days (
        school_id uuid NOT NULL REFERENCES schools (id),
        day date NOT NULL,
        tokens bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
        PRIMARY KEY (school_id, day)
      );
      GRANT SELECT, INSERT, UPDATE ON school_token_days TO ${APP_GROUP_ROLE};
    `);
    await queryRunner.query(tenantRowLevelSecurity('school_token_days'));
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      DROP TABLE IF EXISTS school_token_days;
      ALTER TABLE agent_runs DROP COLUMN IF EXISTS input_tokens, DROP COLUMN IF EXISTS output_tokens, DROP COLUMN IF EXISTS step_tokens;
      REVOKE UPDATE (allowed_models, daily_token_budget) ON schools FROM ${APP_GROUP_ROLE};
      ALTER TABLE schools DROP COLUMN IF EXISTS allowed_models, DROP COLUMN IF EXISTS daily_token_budget;
    `);
  }
}
