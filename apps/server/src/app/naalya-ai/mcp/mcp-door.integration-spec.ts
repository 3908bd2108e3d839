import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ConnectedAppCreated } from '@naalya/access';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimsFor, tokenFor } from '../../../testing/rest-client.js';
import type { TestApp } from '../../../testing/test-app.js';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { startMcpDoorTestStack, type McpDoorTestStack } from './fixtures/mcp-door-test-stack.js';
import { NO_ELICITATION_REFUSAL, mcpCallId } from './mcp-session.js';

let stack: McpDoorTestStack;
let testApp: TestApp;
let doorUrl: string;
let SUFFIX: string;
let school: TestApp['demo']['schools'][0];
let otherSchool: TestApp['demo']['schools'][1];
const clients: Client[] = [];

beforeAll(async () => {
  stack = await startMcpDoorTestStack();
  ({ testApp, doorUrl, suffix: SUFFIX } = stack);
  [school, otherSchool] = testApp.demo.schools;
}, 60_000);

afterAll(async () => {
  for (const client of clients) await client.close().catch(() => undefined);
  await stack?.close();
});

const issueToken = async (persona: DemoPersona, body: Record<string, unknown> = {}): Promise<ConnectedAppCreated> => {
  const response = await fetch(`${await testApp.app.getUrl()}/mcp-tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tokenFor(testApp, persona)}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'Test client', expiresInDays: 1, ...body }),
  });
  expect(response.status).toBe(201);
  return (await response.json()) as ConnectedAppCreated;
};

/** The SDK's own client, with the connected-app token; `elicit` answers every confirmation, or the client has none. */
const connect = async (token: string, elicit?: 'accept' | 'decline', asked: string[] = []) => {
  const client = new Client({ name: 'naalya-test', version: '1.0.0' }, { capabilities: elicit ? { elicitation: { form: {} } } : {} });
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      asked.push(request.params.message);
      return { action: elicit, content: {} };
    });
  }
  const transport = new StreamableHTTPClientTransport(new URL(doorUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  clients.push(client);
  return { client, transport };
};

const resultOf = (result: CallToolResult) => JSON.parse((result.content[0] as { text: string }).text) as Record<string, unknown>;

const auditRowsOf = async (callId: string) =>
  (await testApp.owner.query(`SELECT source, tool, school_id FROM audit_log WHERE call_id = $1`, [callId])) as { source: string; tool: string; school_id: string }[];

const rawPost = async (token: string, body: unknown, sessionId?: string) =>
  fetch(doorUrl, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
      ...(sessionId ? { 'mcp-session-id': sessionId } : {}),
    },
    body: JSON.stringify(body),
  });

/** The JSON-RPC answer of one POST, whether it came as JSON or as one server-sent event. */
const rpcAnswer = async (response: Response): Promise<{ result?: CallToolResult }> => {
  const text = await response.text();
  const data = response.headers.get('content-type')?.includes('text/event-stream')
    ? text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6)).pop()
    : text;
  return JSON.parse(data ?? '{}') as { result?: CallToolResult };
};

const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } };

describe('the MCP door: who is calling', () => {
  it('answers 401 with a WWW-Authenticate pointer to its protected-resource metadata, which names it', async () => {
    const response = await rawPost('', initialize);
    expect(response.status).toBe(401);
    const challenge = response.headers.get('www-authenticate') ?? '';
    const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1];
    expect(metadataUrl).toBe(`${new URL(doorUrl).origin}/.well-known/oauth-protected-resource/mcp`);
    const metadata = (await (await fetch(metadataUrl!)).json()) as { resource: string; bearer_methods_supported: string[] };
    expect(metadata).toMatchObject({ resource: doorUrl, bearer_methods_supported: ['header'] });
  });

  it('the door refuses a login token', async () => {
    const response = await rawPost(tokenFor(testApp, school.personas.schoolAdmin), initialize);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
    await expect(connect(tokenFor(testApp, school.personas.schoolAdmin))).rejects.toThrow();
  });

  it('the door refuses a token issued for another audience, and a revoked one; revoking ends an open session', async () => {
    const { McpTokensService } = await import('./mcp-tokens.service.js');
    const persona = school.personas.schoolAdmin;
    const elsewhere = await testApp.module.get(McpTokensService).create({ name: 'Elsewhere', expiresInDays: 1 }, claimsFor(persona), 'https://other.example/mcp');
    expect((await rawPost(elsewhere.token, initialize)).status).toBe(401);

    const app = await issueToken(persona);
    const { client, transport } = await connect(app.token);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    const response = await fetch(`${await testApp.app.getUrl()}/mcp-tokens/${app.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${tokenFor(testApp, persona)}` } });
    expect(response.status).toBe(204);
    await expect(client.listTools()).rejects.toThrow();
    expect((await rawPost(app.token, initialize)).status).toBe(401);
    // The session's direct run ended with it: its dispatch token is refused from now on.
    const [run] = (await testApp.owner.query(`SELECT status FROM agent_runs WHERE owner_id = $1 AND kind = 'direct' ORDER BY created_at DESC LIMIT 1`, [persona.id])) as { status: string }[];
    expect(run.status).not.toBe('running');
    expect(transport.sessionId).toBeDefined();
  });

  it('the REST API refuses an MCP token', async () => {
    const app = await issueToken(school.personas.teacher);
    const response = await fetch(`${await testApp.app.getUrl()}/departments`, { headers: { authorization: `Bearer ${app.token}` } });
    expect(response.status).toBe(401);
  });
});

describe('the MCP door: what each person sees and does', () => {
  const rpcToolsOf = async (persona: DemoPersona, body: Record<string, unknown> = {}) => {
    const { client } = await connect((await issueToken(persona, body)).token);
    return (await client.listTools()).tools;
  };

  it('lists only the tools of the person\'s roster, with JSON Schema and explicit annotations', async () => {
    const admin = (await rpcToolsOf(school.personas.schoolAdmin)).map((tool) => tool.name);
    expect(admin).toContain('create_department');
    expect(admin).not.toContain('record_attendance');
    expect(admin).not.toContain('approve_lesson_plan');
    const classTeacher = (await rpcToolsOf(school.personas.classTeacher)).map((tool) => tool.name);
    expect(classTeacher).toContain('record_attendance');
    expect(classTeacher).not.toContain('approve_lesson_plan');
    expect(classTeacher).not.toContain('record_marks');
    const dos = await rpcToolsOf(school.personas.directorOfStudies);
    const approve = dos.find((tool) => tool.name === 'approve_lesson_plan');
    expect(approve?.annotations).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
    expect(approve?.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
    expect(dos.map((tool) => tool.name)).not.toContain('record_attendance');
    const create = (await rpcToolsOf(school.personas.schoolAdmin)).find((tool) => tool.name === 'create_department');
    expect(create?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false });
    const list = (await rpcToolsOf(school.personas.schoolAdmin)).find((tool) => tool.name === 'list_departments');
    expect(list?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
  });

  it('a read runs through the tools queue in the token\'s school', async () => {
    const { client } = await connect((await issueToken(school.personas.schoolAdmin)).token);
    const result = await client.callTool({ name: 'list_departments', arguments: {} });
    expect(result.isError).toBe(false);
    const ids = (resultOf(result as CallToolResult)['data'] as { id: string }[]).map((department) => department.id);
    expect(ids).toEqual(expect.arrayContaining(school.departments.map((department) => department.id)));
    for (const department of otherSchool.departments) expect(ids).not.toContain(department.id);
  });

  it('an MCP write is audited once, with source mcp, from the door\'s broker user', async () => {
    const { client, transport } = await connect((await issueToken(school.personas.schoolAdmin)).token);
    const result = await client.callTool({ name: 'create_department', arguments: { name: `Door ${SUFFIX}`.slice(0, 60), campusId: school.campuses[0].id } });
    expect(result.isError).toBe(false);
    const auditId = resultOf(result as CallToolResult)['auditId'];
    const rows = (await testApp.owner.query(`SELECT source, tool, school_id, call_id FROM audit_log WHERE id = $1`, [auditId])) as { source: string; tool: string; school_id: string; call_id: string }[];
    expect(rows).toEqual([{ source: 'mcp', tool: 'create_department', school_id: school.id, call_id: rows[0].call_id }]);
    expect(await auditRowsOf(rows[0].call_id)).toHaveLength(1);
    // The call id is the session's and the request's, as the door derived it.
    expect(rows[0].call_id).toMatch(/^[0-9a-f]{64}$/);
    expect(transport.sessionId).toBeDefined();
  });

  it('refuses another school\'s id with the masked sentence, and writes nothing', async () => {
    const { client } = await connect((await issueToken(school.personas.schoolAdmin)).token, 'accept');
    const foreign = otherSchool.departments[0].id;
    const result = await client.callTool({ name: 'add_department_member', arguments: { departmentId: foreign, staffId: school.personas.teacher.id } });
    expect(result.isError).toBe(true);
    expect(resultOf(result as CallToolResult)).toMatchObject({ code: 'NOT_FOUND' });
    const [{ count }] = (await testApp.owner.query(`SELECT count(*)::int AS count FROM department_members WHERE department_id = $1 AND user_id = $2`, [foreign, school.personas.teacher.id])) as { count: number }[];
    expect(count).toBe(0);
  });

  it('a tools/call repeated in the same session with the same request id runs once; the same id in another session is another call', async () => {
    const app = await issueToken(school.personas.schoolAdmin);
    const { transport } = await connect(app.token);
    const sessionId = transport.sessionId!;
    const call = { jsonrpc: '2.0', id: 'replayed-1', method: 'tools/call', params: { name: 'create_department', arguments: { name: `Once ${SUFFIX}`.slice(0, 60), campusId: school.campuses[0].id } } };
    const first = await rpcAnswer(await rawPost(app.token, call, sessionId));
    const second = await rpcAnswer(await rawPost(app.token, call, sessionId));
    expect(first.result?.isError).toBe(false);
    expect(resultOf(second.result!)).toEqual(resultOf(first.result!));
    expect(await auditRowsOf(mcpCallId(sessionId, 'replayed-1'))).toHaveLength(1);
    const { transport: another } = await connect(app.token);
    const elsewhere = { ...call, params: { ...call.params, arguments: { ...call.params.arguments, name: `Twice ${SUFFIX}`.slice(0, 60) } } };
    expect((await rpcAnswer(await rawPost(app.token, elsewhere, another.sessionId))).result?.isError).toBe(false);
    expect(await auditRowsOf(mcpCallId(another.sessionId!, 'replayed-1'))).toHaveLength(1);
    expect(await auditRowsOf(mcpCallId(sessionId, 'replayed-1'))).toHaveLength(1);
  });
});

describe('the MCP door: confirmation through elicitation', () => {
  const createDepartment = async (client: Client, name: string) => {
    const created = resultOf((await client.callTool({ name: 'create_department', arguments: { name, campusId: school.campuses[0].id } })) as CallToolResult);
    return (created['data'] as { id: string }).id;
  };

  it('asks the person with Rover\'s question from the records, records the approval bound to the call, and runs the delete once', async () => {
    const asked: string[] = [];
    const { client, transport } = await connect((await issueToken(school.personas.schoolAdmin)).token, 'accept', asked);
    const name = `Approve ${SUFFIX}`.slice(0, 60);
    const departmentId = await createDepartment(client, name);
    const result = await client.callTool({ name: 'delete_department', arguments: { departmentId } });
    expect(result.isError).toBe(false);
    // The server's question from the records (the preview), the same one Rover asks: names, never the id.
    expect(asked).toEqual([
      `Delete the department "${name}" (${school.campuses[0].name})? It has no members and no head. The department and its member list are removed for good; its members stay on the staff.`,
    ]);
    const approvals = (await testApp.owner.query(`SELECT event, approved, user_id FROM tool_call_approvals WHERE user_id = $1 AND event = 'delete.department' AND args_hash IS NOT NULL ORDER BY created_at DESC LIMIT 1`, [
      school.personas.schoolAdmin.id,
    ])) as { event: string; approved: boolean; user_id: string }[];
    expect(approvals).toEqual([{ event: 'delete.department', approved: true, user_id: school.personas.schoolAdmin.id }]);
    expect(await testApp.owner.query(`SELECT 1 FROM departments WHERE id = $1`, [departmentId])).toHaveLength(0);
    const deletes = (await testApp.owner.query(`SELECT call_id FROM audit_log WHERE tool = 'delete_department' AND resource_id = $1`, [departmentId])) as { call_id: string }[];
    expect(deletes).toHaveLength(1);
    expect(transport.sessionId).toBeDefined();
  });

  it('a declined confirmation runs nothing', async () => {
    const { client } = await connect((await issueToken(school.personas.schoolAdmin)).token, 'decline');
    const departmentId = await createDepartment(client, `Decline ${SUFFIX}`.slice(0, 60));
    const result = await client.callTool({ name: 'delete_department', arguments: { departmentId } });
    expect(result.isError).toBe(true);
    expect(resultOf(result as CallToolResult)['code']).toBe('CONFIRMATION_DECLINED');
    expect(await testApp.owner.query(`SELECT 1 FROM departments WHERE id = $1`, [departmentId])).toHaveLength(1);
  });

  it('a client without elicitation gets a clear refusal for a tool that needs confirmation, never a silent run', async () => {
    const { client } = await connect((await issueToken(school.personas.schoolAdmin)).token);
    const departmentId = await createDepartment(client, `Refuse ${SUFFIX}`.slice(0, 60));
    const result = await client.callTool({ name: 'delete_department', arguments: { departmentId } });
    expect(result.isError).toBe(true);
    expect(resultOf(result as CallToolResult)).toEqual({ error: NO_ELICITATION_REFUSAL, code: 'CONFIRMATION_REQUIRED' });
    expect(await testApp.owner.query(`SELECT 1 FROM departments WHERE id = $1`, [departmentId])).toHaveLength(1);
  });
});
