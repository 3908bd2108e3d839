import { Controller, Logger } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { Action, ActionAuditAction, AuditResourceType, Resource, UserType } from '@naalya/access';
import {
  RPC_AGENT_TOOLS,
  addDepartmentMemberTool,
  createDepartmentTool,
  deleteDepartmentTool,
  listDepartmentsTool,
  listStaffTool,
  type AgentToolResult,
  type AnyAgentTool,
} from '@naalya/agent-tools';
import { DataSource } from 'typeorm';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { IDENTITY_REFUSED_ERROR } from '../../core/auth/identity.service.js';
import { withSchool } from '../../core/tenancy/tenant-context.js';
import { PLATFORM_WRITE_NEEDS_SCHOOL_ERROR } from '../../core/tenancy/tenant-scope.js';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { DepartmentService } from '../../departments/department.service.js';
import { currentLogContext } from '@naalya/observability';
import { dispatchEnvelope, personaRun } from '../../../testing/dispatch-envelope.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { inMessageFrame, invokeHandler, invokeTool, messageFrame } from '../../../testing/tool-handlers.js';
import { TOOL_FIXTURES } from './fixtures/tool-fixtures.js';
import type { ToolFixture } from './fixtures/tool-fixture.js';
import { CALL_ID_REUSED_ERROR } from './tool-call-ledger.service.js';
import { MASKED_TOOL_ERROR, OUTCOME_UNKNOWN_ERROR } from './tool-error.js';
import { DEADLINE_PASSED_ERROR, MALFORMED_ENVELOPE_ERROR, MISSING_IDENTITY_ERROR, TOOL_MISMATCH_ERROR, ToolExecutor } from './tool-executor.js';
import { NO_TENANT_SCOPE_ERROR } from './tool-scope.js';

let testApp: TestApp;
let schoolA: TestApp['demo']['schools'][0];
let schoolB: TestApp['demo']['schools'][1];

beforeAll(async () => {
  testApp = await createTestApp();
  [schoolA, schoolB] = testApp.demo.schools;
});
afterAll(() => testApp?.close());
afterEach(() => vi.restoreAllMocks());

const call = (tool: Parameters<typeof invokeTool>[1], payload: unknown) => invokeTool(testApp.module, tool, payload);
const count = async (sql: string, parameters: unknown[] = []) =>
  Number(((await testApp.owner.query(sql, parameters)) as { count: string }[])[0].count);
const departmentsNamed = (name: string) => count(`SELECT count(*) FROM departments WHERE name = $1`, [name]);

/**
 * Makes PostgreSQL refuse the audit row of a write whose arguments name `name` (a trigger, as the owner): the audit
 * insert fails in the database, inside whatever statement carries it. Returns the undo.
 */
const refuseAuditRowsFor = async (name: string): Promise<() => Promise<void>> => {
  await testApp.owner.query(`
    CREATE OR REPLACE FUNCTION test_refuse_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'audit table unavailable'; END $$;
    CREATE TRIGGER test_refuse_audit_row BEFORE INSERT ON audit_log FOR EACH ROW
      WHEN (NEW.changes ->> 'name' = '${name.replace(/'/g, "''")}') EXECUTE FUNCTION test_refuse_audit_row();`);
  return async () => void (await testApp.owner.query(`DROP TRIGGER test_refuse_audit_row ON audit_log`));
};
const data = <T>(result: AgentToolResult): T => {
  if ('error' in result) throw new Error(`expected data, got error: ${result.error}`);
  return result.data as T;
};

describe('step 0: the envelope', () => {
  it('refuses a payload without identity sub or type with the spec sentence', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, listStaffTool, {});
    expect(await call(listStaffTool, undefined)).toEqual({ error: MISSING_IDENTITY_ERROR, code: 'IDENTITY_MISSING' });
    expect(await call(listStaffTool, { ...envelope, identity: { ...envelope.identity, sub: '' } })).toEqual({ error: MISSING_IDENTITY_ERROR, code: 'IDENTITY_MISSING' });
    const { type: _type, ...withoutType } = envelope.identity;
    expect(await call(listStaffTool, { ...envelope, identity: withoutType })).toEqual({ error: MISSING_IDENTITY_ERROR, code: 'IDENTITY_MISSING' });
  });

  it('refuses extra identity keys', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.teacher, listStaffTool, {});
    const forged = { ...envelope, identity: { ...envelope.identity, role: 'school_admin' } };
    expect(await call(listStaffTool, forged)).toEqual({ error: MALFORMED_ENVELOPE_ERROR, code: 'ENVELOPE_MALFORMED' });
  });

  it('refuses a non-string schoolId', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, listStaffTool, {});
    expect(await call(listStaffTool, { ...envelope, identity: { ...envelope.identity, schoolId: { $ne: null } } })).toEqual({
      error: MALFORMED_ENVELOPE_ERROR,
      code: 'ENVELOPE_MALFORMED',
    });
  });

  it('refuses an envelope without meta, and runs nothing', async () => {
    const name = 'No Meta';
    const { meta: _meta, ...withoutMeta } = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name });
    expect(await call(createDepartmentTool, withoutMeta)).toEqual({ error: MALFORMED_ENVELOPE_ERROR, code: 'ENVELOPE_MALFORMED' });
    expect(await departmentsNamed(name)).toBe(0);
  });
});

describe('identity comes from the envelope, never from args', () => {
  it('a NUL character in any string of the envelope is refused as invalid arguments naming the field, and runs nothing', async () => {
    const name = 'Nul\u0000Department';
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name });
    expect(await call(createDepartmentTool, envelope)).toEqual({
      error: 'Invalid tool arguments: args.name contains a NUL character (U+0000), which is not allowed.',
      code: 'INVALID_ARGUMENTS',
    });
    const inMeta = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Nul In Meta' });
    expect(await call(createDepartmentTool, { ...inMeta, meta: { ...inMeta.meta, callId: `${inMeta.meta.callId}\u0000` } })).toEqual({
      error: 'Invalid tool arguments: meta.callId contains a NUL character (U+0000), which is not allowed.',
      code: 'INVALID_ARGUMENTS',
    });
    expect(await count(`SELECT count(*) FROM departments WHERE name LIKE 'Nul%'`)).toBe(0);
  });

  it('refuses identity fields smuggled into args as invalid arguments', async () => {
    const result = await call(
      listStaffTool,
      await dispatchEnvelope(schoolA.personas.teacher, listStaffTool, { schoolId: schoolB.id, userId: schoolB.personas.schoolAdmin.id }),
    );
    expect(result).toEqual({ error: expect.stringMatching(/^Invalid tool arguments: .*Unrecognized keys/), code: 'INVALID_ARGUMENTS' });
  });

  it('refuses a forged identity that pairs another school user with this school', async () => {
    const forged = { ...schoolB.personas.schoolAdmin, schoolId: schoolA.id, campusId: null };
    expect(await call(listStaffTool, await dispatchEnvelope(forged, listStaffTool, {}))).toEqual({ error: IDENTITY_REFUSED_ERROR, code: 'IDENTITY_REFUSED' });
  });

  it('refuses an identity whose type was forged to platform admin', async () => {
    const forged = { ...schoolA.personas.teacher, type: UserType.PLATFORM_ADMIN };
    expect(await call(listStaffTool, await dispatchEnvelope(forged, listStaffTool, {}))).toEqual({ error: IDENTITY_REFUSED_ERROR, code: 'IDENTITY_REFUSED' });
  });

  it('refuses a deactivated user', async () => {
    expect(await call(listDepartmentsTool, await dispatchEnvelope(schoolA.personas.deactivated, listDepartmentsTool, {}))).toEqual({
      error: IDENTITY_REFUSED_ERROR,
      code: 'IDENTITY_REFUSED',
    });
  });

  it('fails closed with NO_TENANT_SCOPE_ERROR for staff with no school', async () => {
    const schoolless = { ...schoolA.personas.teacher, schoolId: null };
    expect(await call(listDepartmentsTool, await dispatchEnvelope(schoolless, listDepartmentsTool, {}))).toEqual({ error: NO_TENANT_SCOPE_ERROR, code: 'NO_TENANT_SCOPE' });
  });
});

describe('campus scope', () => {
  it('campus mode ignores a model-supplied campusId', async () => {
    const [kisasi, ntinda] = schoolA.campuses;
    const admin = schoolA.personas.schoolAdmin;
    const staff = data<{ campusId: string }[]>(
      await call(listStaffTool, await dispatchEnvelope(admin, listStaffTool, { campusId: ntinda.id }, { campusId: kisasi.id })),
    );
    expect(staff.length).toBeGreaterThan(0);
    expect(new Set(staff.map((member) => member.campusId))).toEqual(new Set([kisasi.id]));

    const result = await call(
      createDepartmentTool,
      await dispatchEnvelope(admin, createDepartmentTool, { name: 'Pinned Arts', campusId: ntinda.id }, { campusId: kisasi.id }),
    );
    expect(result).toMatchObject({ scopeContext: expect.stringContaining('Kisasi campus only') });
    expect(await count(`SELECT count(*) FROM departments WHERE name = 'Pinned Arts' AND campus_id = $1`, [kisasi.id])).toBe(1);
  });

  it('school mode refuses a campus of another school, and creates nothing', async () => {
    const result = await call(
      createDepartmentTool,
      await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Foreign Arts', campusId: schoolB.campuses[0].id }),
    );
    expect(result).toEqual({ error: 'Campus not found.', code: 'NOT_FOUND' });
    expect(await departmentsNamed('Foreign Arts')).toBe(0);
  });

  it("school mode refuses a campus outside the caller's rules", async () => {
    const result = await call(
      listStaffTool,
      await dispatchEnvelope(schoolA.personas.campusAdmin, listStaffTool, { campusId: schoolA.campuses[1].id }),
    );
    expect(result).toEqual({ error: 'That campus is outside what you may access.', code: 'PERMISSION_DENIED' });
  });

  it('a campus-limited rule narrows the query, not just the type check', async () => {
    const result = await call(listStaffTool, await dispatchEnvelope(schoolA.personas.campusAdmin, listStaffTool, {}));
    const staff = data<{ campusId: string }[]>(result);
    expect(new Set(staff.map((member) => member.campusId))).toEqual(new Set([schoolA.campuses[0].id]));
    expect(result).toMatchObject({ scopeContext: 'Your access covers the Kisasi campus only.' });
  });
});

describe('execute() pins the campus of a campus-mode call', () => {
  const executor = () => testApp.module.get(ToolExecutor);
  const fixtureCall = (fixture: ToolFixture) => fixture.allowed({ demo: testApp.demo, owner: testApp.owner });
  const campusesOf = (persona: DemoPersona) => {
    const school = testApp.demo.schools.find((candidate) => candidate.id === persona.schoolId);
    if (!school) throw new Error(`${persona.email} is in no demo school`);
    return school.campuses;
  };
  /** execute() as a handler calls it (in the frame of a message under the tool's event), with a fn that records its arguments. */
  const executeRecording = async (tool: AnyAgentTool, envelope: unknown) => {
    const received: unknown[] = [];
    const result = await inMessageFrame(tool.event, () =>
      executor().execute(envelope, tool.schema, { auth: 'relationship' }, async (args) => {
        received.push(args);
        return 'ran';
      }),
    );
    return { result, received };
  };
  const createDepartment = (envelope: unknown) =>
    inMessageFrame(createDepartmentTool.event, () =>
      executor().execute(envelope, createDepartmentTool.schema, { auth: 'casl', gate: { action: Action.CREATE, resource: Resource.DEPARTMENT } }, (args, jwt) =>
        testApp.module.get(DepartmentService).create(args, jwt),
      ),
    );

  it("in campus mode a campus-scoped tool runs in the envelope's campus whatever campusId the model passed", async () => {
    const [kisasi, ntinda] = schoolA.campuses;
    // The real service, given exactly what execute() hands the fn: the department is made on the envelope's campus.
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Pinned By Execute', campusId: ntinda.id }, { campusId: kisasi.id });
    expect(await createDepartment(envelope)).toMatchObject({ data: { name: 'Pinned By Execute', campusId: kisasi.id } });
    expect(await count(`SELECT count(*) FROM departments WHERE name = 'Pinned By Execute' AND campus_id = $1`, [kisasi.id])).toBe(1);
    expect(await departmentsNamed('Pinned By Execute')).toBe(1);

    // Every campus-scoped tool, the model naming another campus or none: its fn is given the envelope's campus.
    const campusScoped = TOOL_FIXTURES.filter((fixture) => fixture.tool.campusScoped);
    expect(campusScoped.map((fixture) => fixture.tool.name).sort()).toEqual(RPC_AGENT_TOOLS.filter((tool) => tool.campusScoped).map((tool) => tool.name).sort());
    for (const fixture of campusScoped) {
      const { persona, args } = await fixtureCall(fixture);
      const [pinned, other] = campusesOf(persona);
      const { campusId: _fixtureCampus, ...withoutCampus } = args;
      for (const modelArgs of [{ ...withoutCampus, campusId: other.id }, withoutCampus]) {
        const { result, received } = await executeRecording(fixture.tool, await dispatchEnvelope(persona, fixture.tool, modelArgs, { campusId: pinned.id }));
        expect({ tool: fixture.tool.name, result, received }).toEqual({
          tool: fixture.tool.name,
          result: expect.objectContaining({ data: 'ran' }),
          received: [{ ...fixture.tool.schema.parse(withoutCampus), campusId: pinned.id }],
        });
      }
    }
  });

  it("in school mode, and for a tool that is not campus-scoped, execute() hands the fn the arguments as the model sent them", async () => {
    const ntinda = schoolA.campuses[1];
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Chosen By The Model', campusId: ntinda.id });
    expect(await createDepartment(envelope)).toMatchObject({ data: { name: 'Chosen By The Model', campusId: ntinda.id } });

    for (const fixture of TOOL_FIXTURES) {
      const { persona, args } = await fixtureCall(fixture);
      const [pinned, other] = campusesOf(persona);
      const call = fixture.tool.campusScoped
        ? await dispatchEnvelope(persona, fixture.tool, { ...args, campusId: other.id })
        : await dispatchEnvelope(persona, fixture.tool, args, { campusId: pinned.id });
      const { result, received } = await executeRecording(fixture.tool, call);
      expect({ tool: fixture.tool.name, result, received }).toStrictEqual({
        tool: fixture.tool.name,
        result: expect.objectContaining({ data: 'ran' }),
        received: [fixture.tool.schema.parse(call.args)],
      });
    }
  });

  it('in campus mode a campusId the schema refuses is still refused before anything runs', async () => {
    const { result, received } = await executeRecording(
      listStaffTool,
      await dispatchEnvelope(schoolA.personas.schoolAdmin, listStaffTool, { campusId: 'kisasi' }, { campusId: schoolA.campuses[0].id }),
    );
    expect(result).toEqual({ error: expect.stringMatching(/^Invalid tool arguments: campusId: /), code: 'INVALID_ARGUMENTS' });
    expect(received).toEqual([]);
  });
});

describe('execute() runs only the tool its message was delivered under', () => {
  const CREATE_DEPARTMENT_POSTURE = {
    auth: 'casl',
    gate: { action: Action.CREATE, resource: Resource.DEPARTMENT },
    audit: { action: ActionAuditAction.CREATE, resourceType: AuditResourceType.DEPARTMENT, resourceId: (result: { id: string }) => result.id },
  } as const;

  /** Handlers wired by mistake to another tool's schema, each keeping the posture and service of its own event. */
  @Controller()
  class MiswiredToolsController {
    constructor(
      private readonly executor: ToolExecutor,
      private readonly departmentService: DepartmentService,
    ) {}

    /** A write handed a read's schema: under the read's rules it would skip the ledger. */
    @MessagePattern(createDepartmentTool.event)
    createDepartment(payload: unknown) {
      return this.executor.execute(payload, listDepartmentsTool.schema, CREATE_DEPARTMENT_POSTURE, ({ campusId }, jwt) =>
        this.departmentService.create({ name: 'Wired To A Read', campusId }, jwt),
      );
    }

    /** A read handed a write's schema (a copied handler whose pattern alone was changed): its message would run a create. */
    @MessagePattern(listDepartmentsTool.event)
    listDepartments(payload: unknown) {
      return this.executor.execute(payload, createDepartmentTool.schema, CREATE_DEPARTMENT_POSTURE, (dto, jwt) => this.departmentService.create(dto, jwt));
    }
  }

  /** What a call left behind: the service calls, the departments, audit and ledger rows of its call id, and the security events logged. */
  const attempt = async (call: () => Promise<AgentToolResult>, callId: string, name: string) => {
    const create = vi.spyOn(testApp.module.get(DepartmentService), 'create');
    const warn = vi.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const result = await call();
      return {
        result,
        serviceCalls: create.mock.calls.length,
        departments: await departmentsNamed(name),
        auditRows: await count(`SELECT count(*) FROM audit_log WHERE call_id = $1`, [callId]),
        ledgerRows: await count(`SELECT count(*) FROM tool_call_ledger WHERE call_id = $1`, [callId]),
        logged: warn.mock.calls.map(([message]) => String((message as { msg?: string })?.msg ?? message)).filter((line) => line.startsWith('security event')),
      };
    } finally {
      create.mockRestore();
      warn.mockRestore();
    }
  };
  const nothingLeft = (reason: string) => ({
    result: { error: TOOL_MISMATCH_ERROR, code: 'TOOL_MISMATCH' },
    serviceCalls: 0,
    departments: 0,
    auditRows: 0,
    ledgerRows: 0,
    logged: [expect.stringContaining(`(${reason})`)],
  });

  it('a handler wired to another tool\'s schema is refused, runs no service and writes nothing (no audit, no ledger row)', async () => {
    const admin = schoolA.personas.schoolAdmin;
    const miswired = new MiswiredToolsController(testApp.module.get(ToolExecutor), testApp.module.get(DepartmentService));

    const write = await dispatchEnvelope(admin, createDepartmentTool, { campusId: schoolA.campuses[0].id });
    expect(await attempt(() => invokeHandler(miswired, 'createDepartment', write), write.meta.callId, 'Wired To A Read')).toEqual(nothingLeft('pattern-mismatch'));

    const read = await dispatchEnvelope(admin, listDepartmentsTool, { name: 'Wired To A Write' });
    expect(await attempt(() => invokeHandler(miswired, 'listDepartments', read), read.meta.callId, 'Wired To A Write')).toEqual(nothingLeft('pattern-mismatch'));

    // The handler wired to its own tool's schema runs the same call.
    const rightful = await dispatchEnvelope(admin, createDepartmentTool, { name: 'Wired Right' });
    expect(await attempt(() => call(createDepartmentTool, rightful), rightful.meta.callId, 'Wired Right')).toMatchObject({
      result: { data: { name: 'Wired Right' } },
      serviceCalls: 1,
      departments: 1,
      auditRows: 1,
      ledgerRows: 1,
      logged: [],
    });
  });

  it('a call outside any transport message frame is refused the same way (fail closed)', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Outside The Transport' });
    const outside = () =>
      testApp.module
        .get(ToolExecutor)
        .execute(envelope, createDepartmentTool.schema, CREATE_DEPARTMENT_POSTURE, (dto, jwt) => testApp.module.get(DepartmentService).create(dto, jwt));
    expect(await attempt(outside, envelope.meta.callId, 'Outside The Transport')).toEqual(nothingLeft('no-message-frame'));
  });
});

describe('idempotency ledger', () => {
  it('a repeated callId returns the stored result with no second effect or audit row', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Once Only', campusId: schoolA.campuses[0].id });
    const first = await call(createDepartmentTool, envelope);
    const second = await call(createDepartmentTool, envelope);
    expect(JSON.parse(JSON.stringify(second))).toEqual(JSON.parse(JSON.stringify(first)));
    expect(await departmentsNamed('Once Only')).toBe(1);
    expect(await count(`SELECT count(*) FROM audit_log WHERE call_id = $1`, [envelope.meta.callId])).toBe(1);
  });

  it('a reused callId with other args is refused', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Reuse One' });
    await call(createDepartmentTool, envelope);
    const reused = { ...envelope, args: { name: 'Reuse Two' } };
    expect(await call(createDepartmentTool, reused)).toEqual({ error: CALL_ID_REUSED_ERROR, code: 'CALL_ID_REUSED' });
    expect(await departmentsNamed('Reuse Two')).toBe(0);
  });

  it('concurrent deliveries of one call have exactly one effect and one audit row', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Raced', campusId: schoolA.campuses[1].id });
    const results = await Promise.all(Array.from({ length: 4 }, () => call(createDepartmentTool, envelope)));
    const ids = new Set(results.map((result) => data<{ id: string }>(result).id));
    expect(ids.size).toBe(1);
    expect(await departmentsNamed('Raced')).toBe(1);
    expect(await count(`SELECT count(*) FROM audit_log WHERE call_id = $1`, [envelope.meta.callId])).toBe(1);
  });

  /** Department creates that insert, then wait inside their transaction until open(): a first delivery still running. */
  const holdDepartmentCreates = () => {
    const service = testApp.module.get(DepartmentService);
    const original = service.create.bind(service);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const create = vi.spyOn(service, 'create').mockImplementation(async (dto, jwt) => {
      const created = await original(dto, jwt);
      await gate;
      return created;
    });
    return { create, open };
  };

  it('a repeat that arrives while the first delivery still runs waits for it and answers from the ledger: one department, one audit row, one ledger row, one audit id', async () => {
    // The worker sends a call again when its reply was lost; the first delivery may still be running on another
    // replica. Here the first is held inside its transaction, after its insert, until the repeat is seen waiting.
    const { create, open } = holdDepartmentCreates();
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Repeated In Flight' });
    const first = call(createDepartmentTool, envelope);
    await vi.waitFor(() => expect(create).toHaveBeenCalledTimes(1));
    const repeat = call(createDepartmentTool, envelope);
    // The repeat waits on the call id's lock, not on the department's name.
    await vi.waitFor(async () => expect(await count(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).toBe(1), { timeout: 5_000 });
    open();

    const [one, two] = await Promise.all([first, repeat]);
    const auditId = (one as { auditId?: string }).auditId;
    expect(auditId).toEqual(expect.any(String));
    expect((two as { auditId?: string }).auditId).toBe(auditId);
    expect(data<{ id: string }>(two).id).toBe(data<{ id: string }>(one).id);
    expect(create).toHaveBeenCalledTimes(1);
    expect(await departmentsNamed('Repeated In Flight')).toBe(1);
    expect(await count(`SELECT count(*) FROM audit_log WHERE call_id = $1`, [envelope.meta.callId])).toBe(1);
    expect(await count(`SELECT count(*) FROM tool_call_ledger WHERE call_id = $1`, [envelope.meta.callId])).toBe(1);
  });

  it('a repeat waits for a first delivery still running only until the call\'s deadline, then answers "outcome unknown", never a failure; a later repeat gets the stored answer', async () => {
    const { create, open } = holdDepartmentCreates();
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Still Running' }, { timeoutMs: 1_500 });
    const first = call(createDepartmentTool, envelope);
    await vi.waitFor(() => expect(create).toHaveBeenCalledTimes(1));

    const started = Date.now();
    expect(await call(createDepartmentTool, envelope)).toEqual({ error: OUTCOME_UNKNOWN_ERROR, code: 'OUTCOME_UNKNOWN' });
    // The deadline bounded the wait, not the statement limit (10 s): the caller has stopped listening by then.
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(Date.now()).toBeGreaterThanOrEqual(envelope.meta.deadline - 50);
    open();
    const committed = await first;
    expect((await call(createDepartmentTool, envelope)) as object).toMatchObject({ auditId: (committed as { auditId: string }).auditId });
    expect(create).toHaveBeenCalledTimes(1);
    expect(await departmentsNamed('Still Running')).toBe(1);
    expect(await count(`SELECT count(*) FROM tool_call_ledger WHERE call_id = $1`, [envelope.meta.callId])).toBe(1);
  });

  it('a repeat past its deadline of a call that never committed is refused and runs nothing', async () => {
    const service = testApp.module.get(DepartmentService);
    const create = vi.spyOn(service, 'create').mockRejectedValueOnce(new Error('connection lost mid-write'));
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Never Committed' }, { timeoutMs: 300 });
    expect(await call(createDepartmentTool, envelope)).toEqual({ error: MASKED_TOOL_ERROR, code: 'TOOL_FAILED' });
    // Past the deadline and its clock-skew allowance.
    await new Promise((resolve) => setTimeout(resolve, 2_500));

    expect(await call(createDepartmentTool, envelope)).toEqual({ error: DEADLINE_PASSED_ERROR, code: 'DEADLINE_PASSED' });
    expect(create).toHaveBeenCalledTimes(1);
    expect(await departmentsNamed('Never Committed')).toBe(0);
    expect(await count(`SELECT count(*) FROM audit_log WHERE call_id = $1`, [envelope.meta.callId])).toBe(0);
    expect(await count(`SELECT count(*) FROM tool_call_ledger WHERE call_id = $1`, [envelope.meta.callId])).toBe(0);
  });

  it('a call past its deadline runs nothing', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Too Late' }, { deadline: Date.now() - 5_000 });
    expect(await call(createDepartmentTool, envelope)).toEqual({ error: DEADLINE_PASSED_ERROR, code: 'DEADLINE_PASSED' });
    expect(await departmentsNamed('Too Late')).toBe(0);
  });

  it('a redelivery past its deadline still answers with the stored outcome', async () => {
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Ran In Time' }, { timeoutMs: 300 });
    const first = await call(createDepartmentTool, envelope);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect((await call(createDepartmentTool, envelope)) as object).toMatchObject({ auditId: (first as { auditId: string }).auditId });
  });
});

describe('errors', () => {
  it('a CASL denial returns the permission sentence and runs nothing', async () => {
    const spy = vi.spyOn(testApp.module.get(DepartmentService), 'create');
    const result = await call(createDepartmentTool, await dispatchEnvelope(schoolA.personas.teacher, createDepartmentTool, { name: 'Denied' }));
    expect(result).toEqual({ error: 'You do not have permission to create departments.', code: 'PERMISSION_DENIED' });
    expect(spy).not.toHaveBeenCalled();
  });

  it('invalid args name the problem and run nothing', async () => {
    const result = await call(deleteDepartmentTool, await dispatchEnvelope(schoolA.personas.schoolAdmin, deleteDepartmentTool, { departmentId: 'x' }));
    expect(result).toEqual({ error: expect.stringMatching(/^Invalid tool arguments: departmentId: /), code: 'INVALID_ARGUMENTS' });
  });

  it('masks an unexpected throw, so its detail never reaches the model', async () => {
    vi.spyOn(testApp.module.get(DepartmentService), 'list').mockRejectedValue(new Error('connection to db-internal-7 password=hunter2 failed'));
    const result = await call(listDepartmentsTool, await dispatchEnvelope(schoolA.personas.schoolAdmin, listDepartmentsTool, {}));
    expect(result).toEqual({ error: MASKED_TOOL_ERROR, code: 'TOOL_FAILED' });
  });

  it("logs a masked error's real cause once, at the server, with the call's runId and callId", async () => {
    const logged: { message: unknown; ids: ReturnType<typeof currentLogContext> }[] = [];
    const error = vi.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => void logged.push({ message, ids: currentLogContext() }));
    const persona = schoolA.personas.schoolAdmin;
    const { runId } = personaRun(persona.id);
    // One throw inside the tool's scope (the service), one after it (the audit insert, caught by execute() itself).
    vi.spyOn(testApp.module.get(DepartmentService), 'list').mockRejectedValueOnce(new Error('connection to db-internal-7 failed'));
    const read = await dispatchEnvelope(persona, listDepartmentsTool, {});
    expect(await call(listDepartmentsTool, read)).toEqual({ error: MASKED_TOOL_ERROR, code: 'TOOL_FAILED' });
    const allowAudit = await refuseAuditRowsFor('Unaudited again');
    const write = await dispatchEnvelope(persona, createDepartmentTool, { name: 'Unaudited again' });
    expect(await call(createDepartmentTool, write)).toEqual({ error: MASKED_TOOL_ERROR, code: 'TOOL_FAILED' });
    await allowAudit();
    error.mockRestore();

    const causes = logged.filter(({ message }) => (message as { msg?: string }).msg?.startsWith('Agent tool failed'));
    expect(causes).toHaveLength(2);
    expect(causes[0]).toMatchObject({ ids: { runId, callId: read.meta.callId }, message: { err: expect.stringContaining('connection to db-internal-7 failed') } });
    expect(causes[1]).toMatchObject({ ids: { runId, callId: write.meta.callId }, message: { err: expect.stringContaining('audit table unavailable') } });
  });

  it('passes an HttpException message through', async () => {
    const result = await call(
      createDepartmentTool,
      await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Sciences', campusId: schoolA.campuses[0].id }),
    );
    expect(result).toEqual({ error: 'A department called "Sciences" already exists there.', code: 'CONFLICT' });
  });
});

describe('one unit of work per call', () => {
  it('a write whose audit insert fails leaves no effect and no ledger row', async () => {
    const allowAudit = await refuseAuditRowsFor('Unaudited');
    const envelope = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Unaudited' });
    expect(await call(createDepartmentTool, envelope)).toEqual({ error: MASKED_TOOL_ERROR, code: 'TOOL_FAILED' });
    await allowAudit();
    expect(await departmentsNamed('Unaudited')).toBe(0);
    expect(await count(`SELECT count(*) FROM tool_call_ledger WHERE call_id = $1`, [envelope.meta.callId])).toBe(0);
  });

  it('a write the transport gave up on while it ran (its time limit passed) commits nothing: no department, audit or ledger row', async () => {
    // The transport answers a call past its time limit with an error and aborts its message frame; the executor reads
    // that before committing. The frame is the transport's public one, flipped while the service runs.
    let aborted = false;
    const frame = messageFrame(createDepartmentTool.event, () => aborted);
    const service = testApp.module.get(DepartmentService);
    const original = service.create.bind(service);
    vi.spyOn(service, 'create').mockImplementation(async (dto, jwt) => {
      const created = await original(dto, jwt);
      aborted = dto.name === 'Past The Limit';
      return created;
    });
    const late = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Past The Limit' });
    expect(await invokeTool(testApp.module, createDepartmentTool, late, frame)).toEqual({ error: MASKED_TOOL_ERROR, code: 'TOOL_FAILED' });
    expect(await departmentsNamed('Past The Limit')).toBe(0);
    expect(await count(`SELECT count(*) FROM audit_log WHERE call_id = $1`, [late.meta.callId])).toBe(0);
    expect(await count(`SELECT count(*) FROM tool_call_ledger WHERE call_id = $1`, [late.meta.callId])).toBe(0);

    // The same frame, not aborted: the call commits.
    const inTime = await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Within The Limit' });
    expect(await invokeTool(testApp.module, createDepartmentTool, inTime, frame)).toMatchObject({ data: { name: 'Within The Limit' } });
    expect(await departmentsNamed('Within The Limit')).toBe(1);
  });

  it('a service that writes and then throws leaves nothing behind', async () => {
    const service = testApp.module.get(DepartmentService);
    const original = service.addMember.bind(service);
    vi.spyOn(service, 'addMember').mockImplementation(async (dto, jwt) => {
      await original(dto, jwt);
      throw new Error('failed after writing');
    });
    const sciences = schoolA.departments[0];
    const before = await count(`SELECT count(*) FROM department_members WHERE department_id = $1`, [sciences.id]);
    const result = await call(
      addDepartmentMemberTool,
      await dispatchEnvelope(schoolA.personas.schoolAdmin, addDepartmentMemberTool, { departmentId: sciences.id, staffId: schoolA.personas.campusAdmin.id }),
    );
    expect(result).toEqual({ error: MASKED_TOOL_ERROR, code: 'TOOL_FAILED' });
    expect(await count(`SELECT count(*) FROM department_members WHERE department_id = $1`, [sciences.id])).toBe(before);
  });

  it('no query of a call runs on a second connection', async () => {
    await call(listStaffTool, await dispatchEnvelope(schoolA.personas.campusAdmin, listStaffTool, {}));
    await call(createDepartmentTool, await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Single Connection' }));
    await call(deleteDepartmentTool, await dispatchEnvelope(schoolA.personas.departmentHead, deleteDepartmentTool, { departmentId: schoolA.departments[0].id }));
    expect(testApp.strays()).toEqual([]);
  });

  it('the stray-query detector catches a query outside the frame', async () => {
    const before = testApp.strays().length;
    await withSchool(schoolA.id, schoolA.personas.schoolAdmin.id, async () => {
      await testApp.module.get(DataSource).query('SELECT 1 AS stray');
    });
    expect(testApp.strays().slice(before)).toEqual(['SELECT 1 AS stray']);
  });
});

describe('platform admins', () => {
  it('read across schools', async () => {
    const result = await call(listDepartmentsTool, await dispatchEnvelope(testApp.demo.platformAdmin, listDepartmentsTool, {}));
    const ids = data<{ id: string }[]>(result).map((department) => department.id);
    expect(ids).toEqual(expect.arrayContaining([schoolA.departments[1].id, schoolB.departments[1].id]));
    expect(result).toMatchObject({ scopeContext: 'Your access covers every school on the platform.' });
  });

  it('cannot write without a target school minted at dispatch', async () => {
    const result = await call(createDepartmentTool, await dispatchEnvelope(testApp.demo.platformAdmin, createDepartmentTool, { name: 'Untargeted' }));
    expect(result).toEqual({ error: PLATFORM_WRITE_NEEDS_SCHOOL_ERROR, code: 'PLATFORM_WRITE_NEEDS_SCHOOL' });
    expect(await departmentsNamed('Untargeted')).toBe(0);
  });

  it('write in the target school, audited in that school', async () => {
    const envelope = await dispatchEnvelope(
      testApp.demo.platformAdmin,
      createDepartmentTool,
      { name: 'Targeted', campusId: schoolB.campuses[0].id },
      { targetSchoolId: schoolB.id },
    );
    const result = await call(createDepartmentTool, envelope);
    expect(await count(`SELECT count(*) FROM departments WHERE name = 'Targeted' AND school_id = $1`, [schoolB.id])).toBe(1);
    expect(
      await count(`SELECT count(*) FROM audit_log WHERE id = $1 AND school_id = $2 AND actor_id = $3`, [
        (result as { auditId: string }).auditId,
        schoolB.id,
        testApp.demo.platformAdmin.id,
      ]),
    ).toBe(1);
  });

  it('a staff member naming a target school is refused', async () => {
    const result = await call(
      createDepartmentTool,
      await dispatchEnvelope(schoolA.personas.schoolAdmin, createDepartmentTool, { name: 'Hijack' }, { targetSchoolId: schoolB.id }),
    );
    expect(result).toEqual({ error: 'Only platform administrators choose a target school.', code: 'PERMISSION_DENIED' });
    expect(await departmentsNamed('Hijack')).toBe(0);
  });
});
