import { randomUUID } from 'node:crypto';
import { createDepartmentTool, listDepartmentsTool, type AgentRuntimeContext, type AgentToolResult, type AnyAgentTool } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentToolService } from '../src/naalya-agent/core/tools/agent-tool.service.js';
import { toRpcProxy } from '../src/naalya-agent/core/tools/build-agent-tools.js';
import { RABBITMQ_URL, createTestStack, type TestStack } from '@naalya/test-stack';

// The ability is rebuilt from the database inside every call's transaction and never cached: a permission taken away
// (or given back) in the database is in force on the very next tool call, with no restart, no new context, no wait.
let stack: TestStack;
let caller: AgentToolService;
let teacher: AgentRuntimeContext;
let campusAdmin: AgentRuntimeContext;

const call = async (tool: AnyAgentTool, args: Record<string, unknown>, context: AgentRuntimeContext) => {
  const toolCallId = `perm-${randomUUID()}`;
  const output = await toRpcProxy(tool, caller).invoke(args, {
    context,
    toolCallId,
    writer: null,
    configurable: { thread_id: 'permission-change' },
  } as never);
  return JSON.parse(String(output)) as AgentToolResult;
};

/** The permission row of a role of a school, as the owner sees it (row-level security does not apply to the owner). */
const permissionRow = async (roleName: string, action: string, resource: string) => {
  const { rows } = await stack.owner.query<{ id: string; school_id: string; role_id: string; conditions: unknown }>(
    `SELECT p.id, p.school_id, p.role_id, p.conditions FROM role_permissions p JOIN roles r ON r.id = p.role_id JOIN schools s ON s.id = r.school_id
      WHERE s.name = 'Greenhill Academy' AND r.name = $1 AND p.action = $2 AND p.resource = $3`,
    [roleName, action, resource],
  );
  expect(rows).toHaveLength(1);
  return rows[0];
};

const revoke = (id: string) => stack.owner.query(`DELETE FROM role_permissions WHERE id = $1`, [id]);
const grant = (row: { id: string; school_id: string; role_id: string; conditions: unknown }, action: string, resource: string) =>
  stack.owner.query(`INSERT INTO role_permissions (id, school_id, role_id, action, resource, conditions) VALUES ($1, $2, $3, $4, $5, $6)`, [
    row.id,
    row.school_id,
    row.role_id,
    action,
    resource,
    row.conditions === null ? null : JSON.stringify(row.conditions),
  ]);

beforeAll(async () => {
  stack = await createTestStack({ name: 'e2e' });
  await stack.startServer();
  caller = new AgentToolService({ rabbitmqUrl: RABBITMQ_URL, toolsQueue: stack.toolsQueue, timeoutMs: 8_000 });
  await caller.onModuleInit();
  teacher = await stack.contextFor('teacher@greenhill.school');
  campusAdmin = await stack.contextFor('campus.admin@greenhill.school');
}, 120_000);

afterAll(async () => {
  await caller?.onModuleDestroy();
  await stack?.teardown();
});

describe('a permission change takes effect on the very next call', () => {
  it('a read: revoked, refused on the next call; granted back, allowed on the next call', async () => {
    const row = await permissionRow('Teacher', 'list', 'Department');
    expect(await call(listDepartmentsTool, {}, teacher)).toHaveProperty('data');

    await revoke(row.id);
    try {
      expect(await call(listDepartmentsTool, {}, teacher)).toEqual({ error: 'You do not have permission to list departments.', code: 'PERMISSION_DENIED' });
    } finally {
      await grant(row, 'list', 'Department');
    }
    expect(await call(listDepartmentsTool, {}, teacher)).toHaveProperty('data');
  });

  it('an audited write: revoked, refused with no audit or ledger row; granted back, written and audited on the next call', async () => {
    const row = await permissionRow('Campus administrator', 'create', 'Department');
    const campusId = campusAdmin.userDetails.campusId;
    const auditRows = async () => Number((await stack.owner.query(`SELECT count(*) FROM audit_log WHERE resource_type = 'department'`)).rows[0].count);
    const ledgerRows = async () => Number((await stack.owner.query(`SELECT count(*) FROM tool_call_ledger`)).rows[0].count);

    const before = await call(createDepartmentTool, { name: `Before ${randomUUID().slice(0, 8)}`, campusId }, campusAdmin);
    expect(before).toHaveProperty('auditId');

    const [audits, ledger] = [await auditRows(), await ledgerRows()];
    await revoke(row.id);
    try {
      const refused = await call(createDepartmentTool, { name: `Refused ${randomUUID().slice(0, 8)}`, campusId }, campusAdmin);
      expect(refused).toEqual({ error: 'You do not have permission to create departments.', code: 'PERMISSION_DENIED' });
      expect([await auditRows(), await ledgerRows()]).toEqual([audits, ledger]);
    } finally {
      await grant(row, 'create', 'Department');
    }

    const after = await call(createDepartmentTool, { name: `After ${randomUUID().slice(0, 8)}`, campusId }, campusAdmin);
    expect(after).toHaveProperty('auditId');
    expect([await auditRows(), await ledgerRows()]).toEqual([audits + 1, ledger + 1]);
  });
});
