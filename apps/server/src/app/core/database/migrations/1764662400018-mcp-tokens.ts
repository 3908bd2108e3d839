import type { MigrationInterface, QueryRunner } from 'typeorm';
import { APP_GROUP_ROLE } from '../database-roles.js';
import { ACTOR_SETTING as ACTOR, tenantRowLevelSecurity } from '../row-level-security.js';

/**
 * Tokens for the MCP door (connected apps), and 'mcp' as an audit source.
 *
 * A token belongs to the member of staff who created it, in their school: a tenant row under the usual tenant policy,
 * bound to its owner by a restrictive policy like a thread (a colleague never lists or revokes it). Only the sha256 of
 * the token is stored; the token itself is shown once, at creation. `audience` is the door's resource URL the token was
 * issued for (RFC 8707 resource indicator): the door accepts a token only for its own URL. `campus_id` is the campus
 * mode chosen at creation (NULL: school mode).
 *
 * The door reads a token before any tenant is known, so one narrow SECURITY DEFINER lookup by hash names its owner and
 * school (compare auth_lookup); everything after runs in the owner's frame under row-level security.
 */
export class McpTokens1764662400018 implements MigrationInterface {
  name = 'McpTokens1764662400018';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE mcp_tokens (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        school_id uuid NOT NULL REFERENCES schools (id),
        owner_id uuid NOT NULL,
        name text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
        audience text NOT NULL,
        campus_id uuid,
        token_hash text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz,
        last_used_at timestamptz,
        CONSTRAINT fk_mcp_tokens_owner FOREIGN KEY (school_id, owner_id) REFERENCES users (school_id, id),
        CONSTRAINT fk_mcp_tokens_campus FOREIGN KEY (school_id, campus_id) REFERENCES campuses (school_id, id) ON DELETE CASCADE
      );
      CREATE INDEX ix_mcp_tokens_owner_created ON mcp_tokens (owner_id, created_at DESC);
      ${tenantRowLevelSecurity('mcp_tokens')}
      CREATE POLICY mcp_tokens_owner ON mcp_tokens AS RESTRICTIVE TO ${APP_GROUP_ROLE}
        USING (owner_id = ${ACTOR}) WITH CHECK (owner_id = ${ACTOR});
      GRANT SELECT, INSERT, UPDATE ON mcp_tokens TO ${APP_GROUP_ROLE};

      CREATE FUNCTION mcp_token_lookup(p_token_hash text)
        RETURNS TABLE (id uuid, school_id uuid, owner_id uuid, audience text, campus_id uuid, expires_at timestamptz,
                       revoked_at timestamptz, user_type text, home_campus_id uuid)
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
        AS $$
          SELECT t.id, t.school_id, t.owner_id, t.audience, t.campus_id, t.expires_at, t.revoked_at, u.user_type, u.campus_id
            FROM public.mcp_tokens t JOIN public.users u ON u.id = t.owner_id AND u.school_id = t.school_id
           WHERE t.token_hash = p_token_hash
        $$;
      REVOKE ALL ON FUNCTION mcp_token_lookup(text) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION mcp_token_lookup(text) TO ${APP_GROUP_ROLE};
      CREATE POLICY mcp_tokens_lookup ON mcp_tokens FOR SELECT TO CURRENT_USER USING (true);

      ALTER TABLE audit_log DROP CONSTRAINT audit_log_source_check;
      ALTER TABLE audit_log ADD CONSTRAINT audit_log_source_check CHECK (source IN ('http', 'agent', 'mcp'));
    `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE audit_log DROP CONSTRAINT audit_log_source_check;
      ALTER TABLE audit_log ADD CONSTRAINT audit_log_source_check CHECK (source IN ('http', 'agent'));
      DROP FUNCTION mcp_token_lookup(text);
      DROP TABLE mcp_tokens;
    `);
  }
}
