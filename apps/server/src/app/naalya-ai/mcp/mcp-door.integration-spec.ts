import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LATEST_PROTOCOL_VERSION, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { HTTP_ERROR_SENTENCES, type ConnectedAppCreated } from '@naalya/access';
import {
  ERROR_SENTENCES,
  LOCAL_TOOL_NAMES,
  RPC_AGENT_TOOLS,
  agentMapFor,
  isMutatingEvent,
  transportFailure,
  type AgentCapabilities,
  type AgentRunModeName,
} from '@naalya/agent-tools';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { claimsFor, tokenFor } from '../../../testing/rest-client.js';
import type { TestApp } from '../../../testing/test-app.js';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { startMcpDoorTestStack, type McpDoorTestStack } from './fixtures/mcp-door-test-stack.js';
import { McpDoorService, mcpSessionDeadline } from './mcp-door.service.js';
import { NO_ELICITATION_REFUSAL, mcpCallId } from './mcp-session.js';
import { McpTokensService } from './mcp-tokens.service.js';
import { lookups } from '../tools/fixtures/school-lookups.js';
import { insertPendingLessonPlan } from '../tools/fixtures/tool-fixture.js';

// Small bounds, so that each is reached in a few requests; every test ends its sessions (afterEach).
const CALLS_PER_MINUTE_PER_TOKEN = 5;
const SESSIONS_PER_USER = 3;
const USER_QUOTA = 120;

let stack: McpDoorTestStack;
let testApp: TestApp;
let doorUrl: string;
let SUFFIX: string;
type School = TestApp['demo']['schools'][number];
let greenhill: School;
let lakeside: School;
let opened: { client: Client; transport: StreamableHTTPClientTransport }[] = [];

beforeAll(async () => {
  stack = await startMcpDoorTestStack({
    overrides: { MCP_CALLS_PER_MINUTE_PER_TOKEN: CALLS_PER_MINUTE_PER_TOKEN, MCP_SESSIONS_PER_USER: SESSIONS_PER_USER, TOOL_CALLS_PER_MINUTE_PER_USER: USER_QUOTA },
  });
  ({ testApp, doorUrl, suffix: SUFFIX } = stack);
  [greenhill, lakeside] = testApp.demo.schools;
}, 60_000);

// Ends every session a test opened (DELETE), so that each test starts with none held against the per-person bound.
afterEach(async () => {
  for (const { client, transport } of opened) {
    await transport.terminateSession().catch(() => undefined);
    await client.close().catch(() => undefined);
  }
  opened = [];
});

afterAll(async () => {
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
  opened.push({ client, transport });
  return { client, transport };
};

const resultOf = (result: CallToolResult) => JSON.parse((result.content[0] as { text: string }).text) as Record<string, unknown>;

const auditRowsOf = async (callId: string) =>
  (await testApp.owner.query(`SELECT source, tool, school_id FROM audit_log WHERE call_id = $1`, [callId])) as { source: string; tool: string; school_id: string }[];

/** The audit row a write's result names, and every row of its call: exactly one, with source mcp, in the person's school. */
const expectAuditedOnce = async (result: CallToolResult, tool: string, schoolId: string) => {
  const auditId = resultOf(result)['auditId'];
  const [row] = (await testApp.owner.query(`SELECT call_id FROM audit_log WHERE id = $1`, [auditId])) as { call_id: string }[];
  expect(row?.call_id).toMatch(/^[0-9a-f]{64}$/);
  expect(await auditRowsOf(row.call_id)).toEqual([{ source: 'mcp', tool, school_id: schoolId }]);
  return row.call_id;
};

const auditCountOf = async (actorId: string) =>
  ((await testApp.owner.query(`SELECT count(*)::int AS n FROM audit_log WHERE actor_id = $1`, [actorId])) as { n: number }[])[0].n;

const lastDirectRunOf = async (persona: DemoPersona) =>
  ((await testApp.owner.query(`SELECT status FROM agent_runs WHERE owner_id = $1 AND kind = 'direct' ORDER BY created_at DESC LIMIT 1`, [persona.id])) as {
    status: string;
  }[])[0];

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

/** Counts that must fall in one quota minute start early in it, so that the minute cannot turn between them. */
const earlyInAMinute = async () => {
  const intoMinute = Date.now() % 60_000;
  if (intoMinute > 55_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - intoMinute + 100));
};

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

  const persona = () => greenhill.personas.schoolAdmin;
  const refusedTokens: [string, () => Promise<string>][] = [
    ['a login (JWT) token', async () => tokenFor(testApp, persona())],
    ['a token issued for another audience', async () => (await testApp.module.get(McpTokensService).create({ name: 'Elsewhere', expiresInDays: 1 }, claimsFor(persona()), 'https://other.example/mcp')).token],
    ['an unknown nmcp_ token', async () => 'nmcp_' + 'x'.repeat(43)],
    [
      'an expired token',
      async () => {
        const app = await issueToken(persona());
        await testApp.owner.query(`UPDATE mcp_tokens SET created_at = now() - interval '2 days', expires_at = now() - interval '1 second' WHERE id = $1`, [app.id]);
        return app.token;
      },
    ],
    [
      'a revoked token',
      async () => {
        const app = await issueToken(persona());
        await fetch(`${await testApp.app.getUrl()}/mcp-tokens/${app.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${tokenFor(testApp, persona())}` } });
        return app.token;
      },
    ],
  ];
  it.each(refusedTokens)('the door refuses %s with 401 invalid_token, and the SDK client cannot connect with it', async (_, tokenOf) => {
    const token = await tokenOf();
    const response = await rawPost(token, initialize);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
    await expect(connect(token)).rejects.toThrow();
  });

  it('revoking a token ends its open session and the session\'s direct run', async () => {
    const app = await issueToken(persona());
    const { client } = await connect(app.token);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    expect((await lastDirectRunOf(persona())).status).toBe('running');
    const response = await fetch(`${await testApp.app.getUrl()}/mcp-tokens/${app.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${tokenFor(testApp, persona())}` } });
    expect(response.status).toBe(204);
    await expect(client.listTools()).rejects.toThrow();
    expect((await lastDirectRunOf(persona())).status).not.toBe('running');
  });

  it('the REST API refuses an nmcp_ token', async () => {
    const app = await issueToken(greenhill.personas.teacher);
    const response = await fetch(`${await testApp.app.getUrl()}/departments`, { headers: { authorization: `Bearer ${app.token}` } });
    expect(response.status).toBe(401);
  });
});

/** One demo persona's path through the door, from the records the seed made: what they list, read, write, may not reach, confirm. */
type Call = { name: string; arguments: Record<string, unknown> };
type Schools = { own: School; other: School };
type Confirmation = (schools: Schools, client: Client) => Promise<{ call: Call; question: string; done: () => Promise<void> }>;
type PersonaCase = {
  who: string;
  persona: (schools: Schools) => DemoPersona;
  school: () => School;
  /** The hats the seed gave them, stated here rather than read from the server, which must resolve the same. */
  hats: AgentCapabilities;
  /** Campus mode on this campus of their school; school mode without. */
  campus?: number;
  read: (schools: Schools) => Call & { shows: (data: unknown, schools: Schools) => void };
  /** A write with no confirmation; `n` keeps each one distinct. */
  write: (schools: Schools, n: string) => Promise<Call>;
  /** A call naming the other school's record: refused with the masked not-found sentence, and nothing written. */
  crossSchool: (schools: Schools) => Call;
  /** The tools they have that need confirmation, each with the question the person must be asked (the server's, from the records). */
  confirms: Confirmation[];
};

const idsOf = (data: unknown) => (data as { id: string }[]).map((row) => row.id);
const hats = (of: Partial<AgentCapabilities>): AgentCapabilities => ({ isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: false, ...of });
const studentOf = async (classId: string) => ((await testApp.owner.query(`SELECT id FROM students WHERE class_id = $1 ORDER BY id LIMIT 1`, [classId])) as { id: string }[])[0].id;

/** A lesson plan for the teacher's first teaching assignment: a write without confirmation. */
const lessonPlanOf = (school: School, teacher: DemoPersona, title: string): Call => ({
  name: 'create_lesson_plan',
  arguments: {
    teachingAssignmentId: school.teaching.teachingAssignments.find((assignment) => assignment.teacherId === teacher.id)!.id,
    title,
    weekOf: '2026-03-16',
    objectives: 'Learners can explain what this week covers.',
  },
});

const adminCase = (who: string, school: () => School): PersonaCase => ({
  who,
  persona: ({ own }) => own.personas.schoolAdmin,
  school,
  hats: hats({}),
  read: () => ({
    name: 'list_departments',
    arguments: {},
    shows: (data, { own, other }) => {
      expect(idsOf(data)).toEqual(expect.arrayContaining(own.departments.map((department) => department.id)));
      for (const department of other.departments) expect(idsOf(data)).not.toContain(department.id);
    },
  }),
  write: async ({ own }, n) => ({ name: 'create_department', arguments: { name: `Door ${n} ${SUFFIX}`.slice(0, 60), campusId: own.campuses[0].id } }),
  crossSchool: ({ own, other }) => ({ name: 'add_department_member', arguments: { departmentId: other.departments[0].id, staffId: own.personas.teacher.id } }),
  confirms: [
    async ({ own }, client) => {
    const name = `Confirm ${SUFFIX}`.slice(0, 60);
    const created = resultOf((await client.callTool({ name: 'create_department', arguments: { name, campusId: own.campuses[0].id } })) as CallToolResult);
    const departmentId = (created['data'] as { id: string }).id;
    return {
      call: { name: 'delete_department', arguments: { departmentId } },
      question: `Delete the department "${name}" (${own.campuses[0].name})? It has no members and no head. The department and its member list are removed for good; its members stay on the staff.`,
      done: async () => expect(await testApp.owner.query(`SELECT 1 FROM departments WHERE id = $1`, [departmentId])).toHaveLength(0),
    };
    },
  ],
});

const PERSONAS: PersonaCase[] = [
  {
    who: "Greenhill's class teacher, in campus mode",
    persona: ({ own }) => own.personas.classTeacher,
    school: () => greenhill,
    hats: hats({ isClassTeacher: true }),
    campus: 0,
    read: ({ own }) => ({
      name: 'list_my_classes',
      arguments: {},
      shows: (data) => expect(idsOf(data)).toEqual(own.teaching.classes.filter((stream) => stream.classTeacherId === own.personas.classTeacher.id).map((stream) => stream.id)),
    }),
    write: async ({ own }, n) => {
      const stream = own.teaching.classes.find((candidate) => candidate.classTeacherId === own.personas.classTeacher.id)!;
      const day = String((n.length % 27) + 1).padStart(2, '0');
      return { name: 'record_attendance', arguments: { classId: stream.id, date: `2026-03-${day}`, entries: [{ studentId: await studentOf(stream.id), status: 'present' }] } };
    },
    crossSchool: ({ other }) => ({ name: 'list_class_students', arguments: { classId: other.teaching.classes[0].id } }),
    confirms: [],
  },
  {
    who: "Greenhill's subject teacher",
    persona: ({ own }) => own.personas.subjectTeacher,
    school: () => greenhill,
    hats: hats({ isSubjectTeacher: true }),
    read: ({ own }) => ({
      name: 'list_my_teaching_assignments',
      arguments: {},
      shows: (data) =>
        expect(idsOf(data).sort()).toEqual(own.teaching.teachingAssignments.filter((assignment) => assignment.teacherId === own.personas.subjectTeacher.id).map((assignment) => assignment.id).sort()),
    }),
    write: async ({ own }, n) => lessonPlanOf(own, own.personas.subjectTeacher, `Door plan ${n}`),
    crossSchool: ({ other }) => ({
      name: 'create_lesson_plan',
      arguments: { teachingAssignmentId: other.teaching.lessonPlans[0].teachingAssignmentId, title: 'Not mine', weekOf: '2026-03-16', objectives: 'Learners can see another school.' },
    }),
    confirms: [],
  },
  {
    who: "Greenhill's director of studies (who also teaches Physics)",
    persona: ({ own }) => own.personas.directorOfStudies,
    school: () => greenhill,
    hats: hats({ isDirectorOfStudies: true, isSubjectTeacher: true }),
    read: ({ own }) => ({
      name: 'list_pending_lesson_plans',
      arguments: {},
      shows: (data, { other }) => {
        expect(idsOf(data)).toEqual(expect.arrayContaining(own.teaching.lessonPlans.filter((plan) => plan.status === 'pending').map((plan) => plan.id)));
        for (const plan of other.teaching.lessonPlans) expect(idsOf(data)).not.toContain(plan.id);
      },
    }),
    write: async ({ own }, n) => lessonPlanOf(own, own.personas.directorOfStudies, `Door physics ${n}`),
    crossSchool: ({ other }) => ({ name: 'approve_lesson_plan', arguments: { lessonPlanId: other.teaching.lessonPlans[0].id } }),
    confirms: [
      async ({ own }) => {
        const plan = own.teaching.lessonPlans.find((candidate) => candidate.status === 'pending')!;
        return {
          call: { name: 'approve_lesson_plan', arguments: { lessonPlanId: plan.id } },
          question: `Approve "Linear equations", ${own.personas.subjectTeacher.fullName}'s Mathematics plan for S1 ${own.campuses[0].name}, week of 2 March 2026? It is pending; it becomes approved and ${own.personas.subjectTeacher.fullName} sees it.`,
          done: async () => expect(await testApp.owner.query(`SELECT status FROM lesson_plans WHERE id = $1`, [plan.id])).toEqual([{ status: 'approved' }]),
        };
      },
      async ({ own }) => {
        const stream = own.teaching.classes[2];
        const subject = own.teaching.subjects.find((candidate) => candidate.code === 'KIS')!;
        const teacher = own.personas.bothHats;
        const [current] = (await testApp.owner.query(
          `SELECT u.full_name FROM teaching_assignments t JOIN users u ON u.id = t.teacher_id WHERE t.class_id = $1 AND t.subject_id = $2`,
          [stream.id, subject.id],
        )) as { full_name: string }[];
        return {
          call: { name: 'assign_subject_teacher', arguments: { classId: stream.id, subjectId: subject.id, staffId: teacher.id } },
          question: `Make ${teacher.fullName} the Kiswahili teacher of ${stream.name}? ${current.full_name} teaches it there now and will no longer.`,
          done: async () =>
            expect(await testApp.owner.query(`SELECT teacher_id FROM teaching_assignments WHERE class_id = $1 AND subject_id = $2`, [stream.id, subject.id])).toEqual([{ teacher_id: teacher.id }]),
        };
      },
    ],
  },
  adminCase("Greenhill's school administrator", () => greenhill),
  adminCase("Lakeside's school administrator", () => lakeside),
];

describe.each(PERSONAS)('the MCP door for $who', (each) => {
  const schools = (): Schools => ({ own: each.school(), other: each.school() === greenhill ? lakeside : greenhill });
  const persona = () => each.persona(schools());
  const tokenBody = () => (each.campus === undefined ? {} : { campusId: schools().own.campuses[each.campus].id });
  const mode: AgentRunModeName = each.campus === undefined ? 'school' : 'campus';
  const local = new Set<string>(Object.values(LOCAL_TOOL_NAMES));

  it('lists exactly the RPC tools of the belts their roster gives Rover and their specialists in the chosen mode', async () => {
    const { client } = await connect((await issueToken(persona(), tokenBody())).token);
    const expected = [...new Set(agentMapFor(each.hats, mode).roster.flatMap((entry) => entry.tools))].filter((name) => !local.has(name));
    expect((await client.listTools()).tools.map((tool) => tool.name).sort()).toEqual(expected.sort());
  });

  it('a read runs in their own school and shows nothing of the other', async () => {
    const { client } = await connect((await issueToken(persona(), tokenBody())).token);
    const { shows, ...call } = each.read(schools());
    const result = (await client.callTool(call)) as CallToolResult;
    expect(result.isError).toBe(false);
    shows(resultOf(result)['data'], schools());
  });

  it('a write is audited exactly once, with source mcp, in their school', async () => {
    const { client } = await connect((await issueToken(persona(), tokenBody())).token);
    const call = await each.write(schools(), 'audited');
    const result = (await client.callTool(call)) as CallToolResult;
    expect(result.isError).toBe(false);
    await expectAuditedOnce(result, call.name, schools().own.id);
  });

  it('refuses an id of the other school with the masked not-found sentence, asks nothing and writes nothing', async () => {
    const asked: string[] = [];
    const { client } = await connect((await issueToken(persona(), tokenBody())).token, 'accept', asked);
    const before = await auditCountOf(persona().id);
    const result = (await client.callTool(each.crossSchool(schools()))) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(resultOf(result)['code']).toBe('NOT_FOUND');
    expect(asked).toEqual([]);
    expect(await auditCountOf(persona().id)).toBe(before);
  });

  it('a tools/call repeated in the same session with the same request id runs once and answers the same', async () => {
    const app = await issueToken(persona(), tokenBody());
    const { transport } = await connect(app.token);
    const call = { jsonrpc: '2.0', id: `replayed-${SUFFIX}`, method: 'tools/call', params: await each.write(schools(), 'replayed') };
    const first = await rpcAnswer(await rawPost(app.token, call, transport.sessionId));
    const second = await rpcAnswer(await rawPost(app.token, call, transport.sessionId));
    expect(first.result?.isError).toBe(false);
    expect(resultOf(second.result!)).toEqual(resultOf(first.result!));
    expect(await auditRowsOf(mcpCallId(transport.sessionId!, call.id))).toHaveLength(1);
  });
});

const CONFIRMATIONS = PERSONAS.flatMap((each) => each.confirms.map((confirmation, index) => ({ ...each, confirmation, index })));

describe.each(CONFIRMATIONS)('the MCP door asks $who to confirm (their tool $index)', (each) => {
  it("through elicitation, with Rover's question from the records; the approval is recorded bound to the call and the write runs once", async () => {
    const own = each.school();
    const schools = { own, other: own === greenhill ? lakeside : greenhill };
    const persona = each.persona(schools);
    const asked: string[] = [];
    const { client } = await connect((await issueToken(persona)).token, 'accept', asked);
    const { call, question, done } = await each.confirmation(schools, client);
    const result = (await client.callTool(call)) as CallToolResult;
    expect(result.isError).toBe(false);
    expect(asked).toEqual([question]);
    const callId = await expectAuditedOnce(result, call.name, own.id);
    const event = RPC_AGENT_TOOLS.find((definition) => definition.name === call.name)!.event;
    const approvals = (await testApp.owner.query(`SELECT event, approved, user_id FROM tool_call_approvals WHERE call_id = $1`, [callId])) as unknown[];
    expect(approvals).toEqual([{ event, approved: true, user_id: persona.id }]);
    await done();
  });
});

describe('the MCP door: approve with edits', () => {
  it("an editable argument is a field of the form; a changed value is asked about again, and only the edited call runs, audited once, the client told", async () => {
    const dos = greenhill.personas.directorOfStudies;
    const lessonPlanId = await insertPendingLessonPlan(testApp.owner, greenhill.id, lookups(greenhill).benjaminsMathematics.id, greenhill.personas.subjectTeacher.id);
    const client = new Client({ name: 'editor', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    const forms: { message: string; properties: unknown }[] = [];
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      const params = request.params as { message: string; requestedSchema?: { properties?: Record<string, { default?: unknown }> } };
      forms.push({ message: params.message, properties: params.requestedSchema?.properties });
      // The first form is edited; the second, about the edited call, is accepted as it is shown.
      return { action: 'accept', content: { comment: forms.length === 1 ? 'Door homework' : params.requestedSchema?.properties?.['comment']?.default } };
    });
    const transport = new StreamableHTTPClientTransport(new URL(doorUrl), { requestInit: { headers: { authorization: `Bearer ${(await issueToken(dos)).token}` } } });
    await client.connect(transport);
    opened.push({ client, transport });

    const result = (await client.callTool({ name: 'approve_lesson_plan', arguments: { lessonPlanId, comment: 'Fine' } })) as CallToolResult;

    expect(result.isError).toBe(false);
    expect(forms.map((form) => form.properties)).toEqual([
      { comment: expect.objectContaining({ type: 'string', default: 'Fine' }) },
      { comment: expect.objectContaining({ type: 'string', default: 'Door homework' }) },
    ]);
    expect(forms[1].message).toContain('"Door homework"');
    expect(resultOf(result)).toMatchObject({ userEdited: { fields: ['comment'], ran: { comment: 'Door homework' } } });
    const callId = await expectAuditedOnce(result, 'approve_lesson_plan', greenhill.id);
    expect(await testApp.owner.query(`SELECT review_comment FROM lesson_plans WHERE id = $1`, [lessonPlanId])).toEqual([{ review_comment: 'Door homework' }]);
    const [approval] = (await testApp.owner.query(
      `SELECT a.approved, e.changes FROM tool_call_approvals a JOIN tool_call_edits e ON e.id = a.edit_id WHERE a.call_id = $1`,
      [callId],
    )) as unknown[];
    expect(approval).toEqual({ approved: true, changes: [{ field: 'comment', from: 'Fine', to: 'Door homework' }] });
  });
});

describe('the MCP door: confirmation refused', () => {
  const createDepartment = async (client: Client, name: string) => {
    const created = resultOf((await client.callTool({ name: 'create_department', arguments: { name, campusId: greenhill.campuses[0].id } })) as CallToolResult);
    return (created['data'] as { id: string }).id;
  };

  it('a declined confirmation runs nothing', async () => {
    const { client } = await connect((await issueToken(greenhill.personas.schoolAdmin)).token, 'decline');
    const departmentId = await createDepartment(client, `Decline ${SUFFIX}`.slice(0, 60));
    const result = await client.callTool({ name: 'delete_department', arguments: { departmentId } });
    expect(result.isError).toBe(true);
    expect(resultOf(result as CallToolResult)['code']).toBe('CONFIRMATION_DECLINED');
    expect(await testApp.owner.query(`SELECT 1 FROM departments WHERE id = $1`, [departmentId])).toHaveLength(1);
  });

  it('a client without elicitation gets a clear refusal for a tool that needs confirmation, never a silent run', async () => {
    const { client } = await connect((await issueToken(greenhill.personas.schoolAdmin)).token);
    const departmentId = await createDepartment(client, `Refuse ${SUFFIX}`.slice(0, 60));
    const result = await client.callTool({ name: 'delete_department', arguments: { departmentId } });
    expect(result.isError).toBe(true);
    expect(resultOf(result as CallToolResult)).toEqual({ error: NO_ELICITATION_REFUSAL, code: 'CONFIRMATION_REQUIRED' });
    expect(await testApp.owner.query(`SELECT 1 FROM departments WHERE id = $1`, [departmentId])).toHaveLength(1);
  });
});

describe('the MCP door: tools, calls and their annotations', () => {
  it('annotations: reads are read-only and idempotent; writes are not idempotent as MCP means it (the ledger makes only a repeat of the same request run once); confirmable writes are destructive', async () => {
    const { client } = await connect((await issueToken(greenhill.personas.directorOfStudies)).token);
    const tools = (await client.listTools()).tools;
    expect(tools.length).toBeGreaterThan(0);
    for (const tool of tools) {
      const definition = RPC_AGENT_TOOLS.find((candidate) => candidate.name === tool.name)!;
      const write = isMutatingEvent(definition.event);
      expect(tool.annotations, tool.name).toEqual({ readOnlyHint: !write, destructiveHint: write && definition.confirm !== undefined, idempotentHint: !write, openWorldHint: false });
      expect(tool.inputSchema, tool.name).toMatchObject({ type: 'object', additionalProperties: false });
    }
  });

  it('the same request id in another session of the same token is another call', async () => {
    const app = await issueToken(greenhill.personas.schoolAdmin);
    const call = (name: string) => ({ jsonrpc: '2.0', id: 'same-id', method: 'tools/call', params: { name: 'create_department', arguments: { name, campusId: greenhill.campuses[0].id } } });
    const { transport: one } = await connect(app.token);
    const { transport: two } = await connect(app.token);
    expect((await rpcAnswer(await rawPost(app.token, call(`Once ${SUFFIX}`.slice(0, 60)), one.sessionId))).result?.isError).toBe(false);
    expect((await rpcAnswer(await rawPost(app.token, call(`Twice ${SUFFIX}`.slice(0, 60)), two.sessionId))).result?.isError).toBe(false);
    expect(await auditRowsOf(mcpCallId(one.sessionId!, 'same-id'))).toHaveLength(1);
    expect(await auditRowsOf(mcpCallId(two.sessionId!, 'same-id'))).toHaveLength(1);
  });

  it('a call the platform never answered is the worker\'s sentence: outcome unknown for a write, simply failed for a read', () => {
    expect(transportFailure('create.department', 'timeout', 'c1').error).toContain('The outcome is unknown');
    expect(transportFailure('list.departments', 'unreachable').error).not.toContain('unknown');
    expect(transportFailure('list.departments', 'unreachable').code).toBe('PLATFORM_UNREACHABLE');
  });
});

describe('the MCP door: bounds per client, person and session', () => {
  it(`more than ${CALLS_PER_MINUTE_PER_TOKEN} tools/call a minute from one token are refused with 429, the masked sentence and Retry-After, in every session of the token; another token of the same person is not`, async () => {
    const persona = greenhill.personas.campusAdmin;
    const app = await issueToken(persona);
    const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'list_departments', arguments: {} } });
    await earlyInAMinute();
    const { transport: one } = await connect(app.token);
    const { transport: two } = await connect(app.token);
    for (let id = 1; id <= CALLS_PER_MINUTE_PER_TOKEN; id += 1) {
      const response = await rawPost(app.token, call(id), (id % 2 ? one : two).sessionId);
      expect(response.status).toBe(200);
      await response.text();
    }
    const refused = await rawPost(app.token, call(99), two.sessionId);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    expect(await refused.json()).toEqual({
      jsonrpc: '2.0',
      id: 99,
      error: { code: -32000, message: HTTP_ERROR_SENTENCES.MCP_CLIENT_RATE_LIMITED, data: { code: 'MCP_CLIENT_RATE_LIMITED' } },
    });
    // The SDK's client hears it as an HTTP 429 carrying the sentence.
    const { client } = await connect(app.token);
    const error = await client.callTool({ name: 'list_departments', arguments: {} }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StreamableHTTPError);
    expect((error as StreamableHTTPError).code).toBe(429);
    expect((error as Error).message).toContain(HTTP_ERROR_SENTENCES.MCP_CLIENT_RATE_LIMITED);
    await Promise.all(opened.splice(0).map(({ transport }) => transport.terminateSession().catch(() => undefined)));
    const { client: other } = await connect((await issueToken(persona)).token);
    expect((await other.callTool({ name: 'list_departments', arguments: {} })).isError).toBe(false);
  });

  it("the person's tool-call quota applies to MCP calls as to Rover's: over it, the masked sentence and nothing runs", async () => {
    // A person no other test calls as: their quota minute is theirs alone. Spent in the shared counter, as a busy minute would.
    const persona = greenhill.personas.registrar;
    await earlyInAMinute();
    await testApp.owner.query(
      `INSERT INTO tool_call_quota_counters (key, window_minute, count) VALUES ($1, $2, $3)
       ON CONFLICT (key, window_minute) DO UPDATE SET count = excluded.count`,
      [`user:${persona.id}`, Math.floor(Date.now() / 60_000), USER_QUOTA],
    );
    const { client } = await connect((await issueToken(persona)).token);
    const result = (await client.callTool({ name: 'list_departments', arguments: {} })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(resultOf(result)).toEqual({ error: ERROR_SENTENCES.USER_QUOTA_EXCEEDED, code: 'USER_QUOTA_EXCEEDED' });
  });

  it(`a person may hold ${SESSIONS_PER_USER} sessions at once: one more is refused with 429 and the masked sentence; ending one frees its place`, async () => {
    const persona = greenhill.personas.departmentHead;
    const app = await issueToken(persona);
    const sessions = [];
    for (let n = 0; n < SESSIONS_PER_USER; n += 1) sessions.push(await connect(app.token));
    // Another token of the same person counts too: the bound is the person's.
    const response = await rawPost((await issueToken(persona)).token, initialize);
    expect(response.status).toBe(429);
    expect(await response.json()).toMatchObject({ error: { message: HTTP_ERROR_SENTENCES.MCP_SESSION_LIMIT, data: { code: 'MCP_SESSION_LIMIT' } } });
    await sessions[0].transport.terminateSession();
    await expect(connect(app.token)).resolves.toBeDefined();
  });

  it('an unknown session id gets 404 (the client initialises again), and so does a session another token opened', async () => {
    const app = await issueToken(greenhill.personas.teacher);
    const list = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
    expect((await rawPost(app.token, list, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const { transport } = await connect(app.token);
    expect((await rawPost((await issueToken(greenhill.personas.teacher)).token, list, transport.sessionId)).status).toBe(404);
    expect((await rawPost(app.token, list, transport.sessionId)).status).toBe(200);
  });

  it('ending a session (DELETE) ends its direct run; a request in it afterwards gets 404', async () => {
    const persona = greenhill.personas.bothHats;
    const app = await issueToken(persona);
    const { transport } = await connect(app.token);
    expect((await lastDirectRunOf(persona)).status).toBe('running');
    const sessionId = transport.sessionId;
    await transport.terminateSession();
    // The transport answers the DELETE as it closes; the run is closed right after.
    await expect.poll(async () => (await lastDirectRunOf(persona)).status).not.toBe('running');
    expect((await rawPost(app.token, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, sessionId)).status).toBe(404);
  });

  it('a session no request reached for MCP_SESSION_IDLE_SECONDS ends with its direct run; one being answered does not', async () => {
    const persona = greenhill.personas.bothHats;
    const app = await issueToken(persona);
    const { transport } = await connect(app.token);
    const door = testApp.module.get(McpDoorService);
    await door.closeIdle(Date.now() + 60_000);
    expect((await lastDirectRunOf(persona)).status).toBe('running');
    await door.closeIdle(Date.now() + 1_800_000);
    expect((await lastDirectRunOf(persona)).status).not.toBe('running');
    expect((await rawPost(app.token, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, transport.sessionId)).status).toBe(404);

    // A call waiting for the person's confirmation is a request being answered: its session is not idle however long it waits.
    let answer: (action: 'decline') => void = () => undefined;
    const client = new Client({ name: 'slow-person', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
    const asked = new Promise<void>((resolve) => {
      client.setRequestHandler(ElicitRequestSchema, () => {
        resolve();
        return new Promise((reply) => (answer = (action) => reply({ action })));
      });
    });
    const slow = new StreamableHTTPClientTransport(new URL(doorUrl), {
      requestInit: { headers: { authorization: `Bearer ${(await issueToken(greenhill.personas.schoolAdmin)).token}` } },
    });
    await client.connect(slow);
    opened.push({ client, transport: slow });
    const departmentId = greenhill.departments[0].id;
    const pending = client.callTool({ name: 'delete_department', arguments: { departmentId } }).catch((caught: unknown) => caught);
    await asked;
    await door.closeIdle(Date.now() + 1_800_000);
    answer('decline');
    expect(resultOf((await pending) as CallToolResult)['code']).toBe('CONFIRMATION_DECLINED');
  });

  it("a session ends at its token's expiry, or its dispatch token's if sooner, whatever the client does, and its direct run with it", async () => {
    const now = Date.now();
    expect(mcpSessionDeadline(new Date(now + 86_400_000), 3600, now)).toBe(now + 3_600_000);
    expect(mcpSessionDeadline(new Date(now + 60_000), 3600, now)).toBe(now + 60_000);
    const persona = greenhill.personas.bothHats;
    const app = await issueToken(persona);
    await testApp.owner.query(`UPDATE mcp_tokens SET expires_at = now() + interval '2 seconds' WHERE id = $1`, [app.id]);
    await connect(app.token);
    expect((await lastDirectRunOf(persona)).status).toBe('running');
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await lastDirectRunOf(persona)).status).not.toBe('running');
  });
});
