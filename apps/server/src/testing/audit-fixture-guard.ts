import type { TestingModule } from '@nestjs/testing';
import { isMutatingEvent, resultMismatch, type AgentToolResult, type AnyAgentTool } from '@naalya/agent-tools';
import type { DataSource } from 'typeorm';
import { vi } from 'vitest';
import type { FixtureContext, ToolFixture } from '../app/naalya-ai/tools/fixtures/tool-fixture.js';
import { ToolExecutor } from '../app/naalya-ai/tools/tool-executor.js';
import type { ToolPosture } from '../app/naalya-ai/tools/tool-posture.js';
import { isDeepStrictEqual } from 'node:util';
import { auditChanges } from '../app/core/audit/audit-changes.js';
import { dispatchEnvelope, personaRun } from './dispatch-envelope.js';
import { invokeTool } from './tool-handlers.js';

type AuditRow = {
  id: string;
  school_id: string;
  actor_id: string;
  action: string;
  resource_type: string;
  resource_id: string | null;
  source: string;
  call_id: string | null;
  trace_id: string | null;
  tool: string | null;
  route: string | null;
  run_id: string | null;
  resource_name: string | null;
  changes: unknown;
};

/** What execute() hands the service: the validated arguments, with the chat's campus pinned in a campus chat. */
const validatedArgs = (tool: AnyAgentTool, call: { args: Record<string, unknown>; options?: { campusId?: string } }) => {
  const args = tool.schema.parse(call.args) as Record<string, unknown>;
  return tool.campusScoped && call.options?.campusId ? { ...args, campusId: call.options.campusId } : args;
};

export type GuardContext = FixtureContext & { module: TestingModule; owner: DataSource };
export type Invoke = (module: TestingModule, tool: AnyAgentTool, payload: unknown) => Promise<AgentToolResult>;

/** The audit rows that exist now: what a call wrote is what is there afterwards and not here. */
const auditMark = async (owner: DataSource): Promise<string[]> =>
  ((await owner.query(`SELECT id FROM audit_log`)) as { id: string }[]).map((row) => row.id);

// By row identity, not by a created_at window: such a window compares the database's clock with this process's and
// counted rows that no call of the window wrote (once in CI, not reproduced); row ids cannot be misattributed.
const auditRowsSince = async (owner: DataSource, mark: string[]): Promise<AuditRow[]> =>
  owner.query(`SELECT * FROM audit_log WHERE NOT (id = ANY($1::uuid[])) ORDER BY created_at`, [mark]);

/**
 * The audit-fixture guard: for every tool, its fixture proves through execute() on real PostgreSQL that
 * a successful mutating call writes exactly one correct audit row, that the denied call is refused for the
 * reason its fixture declares, and that reads, denials and failures write none; and that the successful call's
 * result, as it travels, matches the tool's result schema (what clients render it from). Returns the violations,
 * so a deliberately broken case can show that it catches them.
 */
export const auditFixtureViolations = async (
  context: GuardContext,
  tools: readonly AnyAgentTool[],
  fixtures: readonly ToolFixture[],
  invoke: Invoke = invokeTool,
): Promise<string[]> => {
  const violations: string[] = [];
  const executor = context.module.get(ToolExecutor);
  for (const tool of tools) {
    const fixture = fixtures.find((candidate) => candidate.tool.event === tool.event);
    const mutating = isMutatingEvent(tool.event);
    if (!fixture) {
      violations.push(`${tool.name}: no fixture${mutating ? ' for a mutating tool' : ''}`);
      continue;
    }
    const spy = vi.spyOn(executor, 'execute');
    try {
      const call = await fixture.allowed(context);
      const envelope = await dispatchEnvelope(call.persona, tool, call.args, call.options);
      const mark = await auditMark(context.owner);
      const result = await invoke(context.module, tool, envelope);
      const rows = await auditRowsSince(context.owner, mark);
      const posture = spy.mock.calls.at(-1)?.[2] as ToolPosture<unknown> | undefined;
      if (!posture) violations.push(`${tool.name}: the handler did not go through execute()`);
      if ('error' in result) {
        violations.push(`${tool.name}: the allowed call failed: ${result.error}`);
        continue;
      }
      const mismatch = resultMismatch(tool, result.data);
      if (mismatch) violations.push(`${tool.name}: the result does not match its result schema: ${mismatch}`);
      if (!mutating) {
        if (posture?.audit) violations.push(`${tool.name}: a read posture must not pass audit`);
        if (rows.length !== 0) violations.push(`${tool.name}: a read wrote ${rows.length} audit rows`);
      } else {
        if (!posture?.audit) violations.push(`${tool.name}: a mutating tool's posture has no audit`);
        if (!fixture.audit) violations.push(`${tool.name}: the fixture does not say which audit row to expect`);
        if (rows.length !== 1) violations.push(`${tool.name}: one successful call wrote ${rows.length} audit rows, not 1`);
        const [row] = rows;
        if (row && fixture.audit) {
          const expected = {
            school_id: call.options?.targetSchoolId ?? call.persona.schoolId,
            actor_id: call.persona.id,
            action: fixture.audit.action,
            resource_type: fixture.audit.resourceType,
            resource_id: fixture.audit.resourceId(result.data, call),
            source: 'agent',
            call_id: envelope.meta.callId,
            // No tracing in these tests: the row says so with null, never a made-up id (one-trace.e2e-spec has it set).
            trace_id: null,
            // Activity: the tool by name (a REST route only on REST rows) and the run the call came from.
            tool: tool.name,
            route: null,
            run_id: personaRun(call.persona.id).runId,
          };
          for (const [column, value] of Object.entries(expected)) {
            if (row[column as keyof AuditRow] !== value) {
              violations.push(`${tool.name}: audit ${column} is ${row[column as keyof AuditRow]}, expected ${value}`);
            }
          }
          // The display name at write time: the one the fixture knows, else at least some name (never an id-only row).
          if (call.resourceName !== undefined ? row.resource_name !== call.resourceName : !row.resource_name) {
            violations.push(`${tool.name}: audit resource_name is ${row.resource_name}, expected ${call.resourceName ?? 'a display name'}`);
          }
          if (!isDeepStrictEqual(row.changes, auditChanges(validatedArgs(tool, call)))) {
            violations.push(`${tool.name}: audit changes are ${JSON.stringify(row.changes)}, expected the validated arguments`);
          }
          if (result.auditId !== row.id) violations.push(`${tool.name}: the result's auditId does not name the row it wrote`);
        }
      }

      const denied = await fixture.denied(context);
      const deniedEnvelope = await dispatchEnvelope(denied.persona, tool, denied.args, denied.options);
      const deniedMark = await auditMark(context.owner);
      const deniedResult = await invoke(context.module, tool, deniedEnvelope);
      if (!('error' in deniedResult)) violations.push(`${tool.name}: the denied call was allowed`);
      else if (deniedResult.error !== denied.refusal) {
        violations.push(`${tool.name}: the denied call was refused with "${deniedResult.error}", expected "${denied.refusal}"`);
      }
      const deniedRows = await auditRowsSince(context.owner, deniedMark);
      if (deniedRows.length) violations.push(`${tool.name}: a denied call wrote ${deniedRows.length} audit rows`);

      const retry = await fixture.allowed(context);
      const failedEnvelope = await dispatchEnvelope(retry.persona, tool, { ...retry.args, unexpected: 1 }, retry.options);
      const failedMark = await auditMark(context.owner);
      const failed = await invoke(context.module, tool, failedEnvelope);
      if (!('error' in failed)) violations.push(`${tool.name}: a call with invalid arguments succeeded`);
      const failedRows = await auditRowsSince(context.owner, failedMark);
      if (failedRows.length) violations.push(`${tool.name}: a failed call wrote ${failedRows.length} audit rows`);
    } finally {
      spy.mockRestore();
    }
  }
  return violations;
};
