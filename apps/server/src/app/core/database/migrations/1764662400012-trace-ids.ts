import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The OpenTelemetry trace id (32 hex digits) of the request that wrote a run, an audit row or an approval: from an
 * audit row an operator reaches the spans of the run and the tool call that wrote it. Null with tracing off, and on
 * rows written before. Only a lookup key: nothing decides on it, and no index, since it is searched from the trace
 * backend's side (a trace id at hand) rarely and per school.
 */
export class TraceIds1764662400012 implements MigrationInterface {
  name = 'TraceIds1764662400012';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['agent_runs', 'audit_log', 'tool_call_approvals']) {
      await queryRunner.query(`ALTER TABLE ${table} ADD COLUMN trace_id text CHECK (trace_id ~ '^[0-9a-f]{32}$')`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['agent_runs', 'audit_log', 'tool_call_approvals']) await queryRunner.query(`ALTER TABLE ${table} DROP COLUMN trace_id`);
  }
}
