import { Controller } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { Action, ActionAuditAction, Resource } from '@naalya/access';
import { RPC_AGENT_TOOLS, createDepartmentTool, listClassStudentsTool, listStaffTool, type AnyAgentTool } from '@naalya/agent-tools';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditFixtureViolations, type GuardContext } from '../../../testing/audit-fixture-guard.js';
import { dispatchEnvelope } from '../../../testing/dispatch-envelope.js';
import { gateParityViolations, handlerCoverageViolations } from '../../../testing/handler-guards.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { inMessageFrame, invokeTool } from '../../../testing/tool-handlers.js';
import { IDENTITY_REFUSED_ERROR } from '../../core/auth/identity.service.js';
import { listClassStudentsFixture } from './fixtures/list-class-students.fixture.js';
import type { ToolFixture } from './fixtures/tool-fixture.js';
import { TOOL_FIXTURES } from './fixtures/tool-fixtures.js';
import { TOOL_HANDLER_CONTROLLERS } from './naalya-ai-tools.module.js';
import { ToolExecutor } from './tool-executor.js';
import type { ToolPosture } from './tool-posture.js';

let testApp: TestApp;
let context: GuardContext;

beforeAll(async () => {
  testApp = await createTestApp();
  context = { module: testApp.module, owner: testApp.owner, demo: testApp.demo };
});
afterAll(() => testApp?.close());

describe('audit-fixture guard', () => {
  it('every tool: one correct audit row per successful write, none for reads, denials and failures; the result matches its result schema', async () => {
    expect(await auditFixtureViolations(context, RPC_AGENT_TOOLS, TOOL_FIXTURES)).toEqual([]);
  });

  it("catches a handler whose result no longer matches its tool's result schema, naming the tool and the field", async () => {
    // The handler's result drifted (the name moved to another key) while the schema, and so the Hub, still read `name`.
    const renamed = async (module: GuardContext['module'], tool: AnyAgentTool, payload: unknown) => {
      const result = await invokeTool(module, tool, payload);
      if (!('data' in result)) return result;
      const { name, ...rest } = result.data as { name: string };
      return { ...result, data: { ...rest, title: name } };
    };
    expect(await auditFixtureViolations(context, [createDepartmentTool], TOOL_FIXTURES, renamed)).toEqual([
      'create_department: the result does not match its result schema: name: Invalid input: expected string, received undefined; Unrecognized key: "title"',
    ]);
  });

  it('catches a mutating tool without a fixture', async () => {
    const withoutCreate = TOOL_FIXTURES.filter((fixture) => fixture.tool !== createDepartmentTool);
    expect(await auditFixtureViolations(context, [createDepartmentTool], withoutCreate)).toEqual([
      'create_department: no fixture for a mutating tool',
    ]);
  });

  it('catches a fixture expecting the wrong audit row', async () => {
    const fixture = TOOL_FIXTURES.find((candidate) => candidate.tool === createDepartmentTool)!;
    const wrong = { ...fixture, audit: { ...fixture.audit!, resourceType: 'campus' } };
    const violations = await auditFixtureViolations(context, [createDepartmentTool], [wrong]);
    expect(violations).toContainEqual(expect.stringContaining('audit resource_type is department, expected campus'));
  });

  it('catches a denied call refused for another reason than the one its fixture declares', async () => {
    // Refused, but by the identity check: this call never reaches the relationship it is meant to prove.
    const deactivated: ToolFixture = {
      ...listClassStudentsFixture,
      denied: async (fixtureContext) => ({
        ...(await listClassStudentsFixture.denied(fixtureContext)),
        persona: fixtureContext.demo.schools[0].personas.deactivated,
      }),
    };
    expect(await auditFixtureViolations(context, [listClassStudentsTool], [deactivated])).toEqual([
      `list_class_students: the denied call was refused with "${IDENTITY_REFUSED_ERROR}", expected "Only the class teacher or a director of studies can see this class's students."`,
    ]);
  });

  it('catches a handler that writes two audit rows for one call', async () => {
    const doubleAudit = async (module: GuardContext['module'], tool: AnyAgentTool, payload: unknown) => {
      const result = await invokeTool(module, tool, payload);
      if ('data' in result) {
        await context.owner.query(
          `INSERT INTO audit_log (school_id, actor_id, actor_type, action, resource_type, source) SELECT school_id, actor_id, actor_type, action, resource_type, source FROM audit_log WHERE id = $1`,
          [result.auditId],
        );
      }
      return result;
    };
    const violations = await auditFixtureViolations(context, [createDepartmentTool], TOOL_FIXTURES, doubleAudit);
    expect(violations).toContain('create_department: one successful call wrote 2 audit rows, not 1');
  });

  it('catches an audit row without what Activity needs: its tool, run, display name or the validated arguments', async () => {
    // The row as a write path that bypassed the audit service would leave it: ids only, and a secret in its summary.
    const bareAudit = async (module: GuardContext['module'], tool: AnyAgentTool, payload: unknown) => {
      const result = await invokeTool(module, tool, payload);
      if ('data' in result) {
        await context.owner.query(
          `UPDATE audit_log SET tool = NULL, route = 'POST /departments', run_id = NULL, resource_name = NULL, changes = '{"password": "x"}' WHERE id = $1`,
          [result.auditId],
        );
      }
      return result;
    };
    const violations = await auditFixtureViolations(context, [createDepartmentTool], TOOL_FIXTURES, bareAudit);
    expect(violations).toEqual(
      expect.arrayContaining([
        'create_department: audit tool is null, expected create_department',
        'create_department: audit route is POST /departments, expected null',
        expect.stringMatching(/^create_department: audit run_id is null, expected [0-9a-f-]{36}$/),
        expect.stringMatching(/^create_department: audit resource_name is null, expected Arts /),
        'create_department: audit changes are {"password":"x"}, expected the validated arguments',
      ]),
    );
  });

  it('catches a read posture that passes audit', async () => {
    const executor = testApp.module.get(ToolExecutor);
    const auditedRead = (_module: GuardContext['module'], tool: AnyAgentTool, payload: unknown) =>
      inMessageFrame(tool.event, () =>
        executor.execute(
          payload,
          listStaffTool.schema,
          {
            auth: 'casl',
            gate: { action: Action.LIST, resource: Resource.STAFF },
            audit: { action: ActionAuditAction.CREATE, resourceType: 'staff' },
          },
          async () => [tool.name],
        ),
      );
    const violations = await auditFixtureViolations(context, [listStaffTool], TOOL_FIXTURES, auditedRead);
    expect(violations).toContain('list_staff: a read posture must not pass audit');
  });
});

describe('handler coverage', () => {
  it('every event has exactly one @MessagePattern handler', () => {
    expect(handlerCoverageViolations(RPC_AGENT_TOOLS)).toEqual([]);
  });

  it('catches a second handler for an event and a handler for an unregistered event', () => {
    @Controller()
    class DuplicateToolsController {
      @MessagePattern(listStaffTool.event) again() {
        return 'a second handler';
      }
      @MessagePattern('list.ghosts') ghosts() {
        return 'a handler for no tool';
      }
    }
    expect(handlerCoverageViolations(RPC_AGENT_TOOLS, [...TOOL_HANDLER_CONTROLLERS, DuplicateToolsController])).toEqual([
      'list.staff: 2 handlers, expected exactly 1',
      'list.ghosts: a handler for an event no tool declares',
    ]);
  });

  it.each(RPC_AGENT_TOOLS.map((tool) => [tool.name, tool] as const))(
    '%s: no service method runs unless execute ran first, and none for a refused envelope',
    async (_, tool) => {
      // Every service a tool controller was given, so a new domain is watched without editing this test.
      const executor = testApp.module.get(ToolExecutor);
      const services = [
        ...new Set(
          TOOL_HANDLER_CONTROLLERS.flatMap((controller) =>
            Object.values(testApp.module.get(controller) as object).filter(
              (dependency): dependency is object => typeof dependency === 'object' && dependency !== null && dependency !== executor,
            ),
          ),
        ),
      ];
      const serviceSpies = services.flatMap((service) =>
        Object.getOwnPropertyNames(Object.getPrototypeOf(service))
          .filter((method) => method !== 'constructor')
          .map((method) => vi.spyOn(service as unknown as Record<string, () => unknown>, method)),
      );
      const executeSpy = vi.spyOn(testApp.module.get(ToolExecutor), 'execute');
      try {
        const fixture = TOOL_FIXTURES.find((candidate) => candidate.tool === tool)!;
        const call = await fixture.allowed(context);
        const envelope = await dispatchEnvelope(call.persona, tool, call.args, call.options);
        const { identity: _identity, ...withoutIdentity } = envelope;
        expect(await invokeTool(testApp.module, tool, withoutIdentity)).toEqual({ error: 'Missing tool-call identity.', code: 'IDENTITY_MISSING' });
        expect(serviceSpies.filter((spy) => spy.mock.calls.length > 0)).toEqual([]);

        const result = await invokeTool(testApp.module, tool, envelope);
        expect(result).toHaveProperty('data');
        const serviceCalls = serviceSpies.flatMap((spy) => spy.mock.invocationCallOrder);
        expect(serviceCalls.length).toBeGreaterThan(0);
        expect(Math.min(...serviceCalls)).toBeGreaterThan(executeSpy.mock.invocationCallOrder.at(-1)!);
      } finally {
        serviceSpies.forEach((spy) => spy.mockRestore());
        executeSpy.mockRestore();
      }
    },
  );
});

describe('gate parity', () => {
  const postureOf = async (tool: AnyAgentTool): Promise<ToolPosture<unknown>> => {
    const spy = vi.spyOn(testApp.module.get(ToolExecutor), 'execute');
    try {
      const fixture = TOOL_FIXTURES.find((candidate) => candidate.tool === tool)!;
      const call = await fixture.allowed(context);
      await invokeTool(testApp.module, tool, await dispatchEnvelope(call.persona, tool, call.args, call.options));
      return spy.mock.calls.at(-1)![2] as ToolPosture<unknown>;
    } finally {
      spy.mockRestore();
    }
  };

  it.each(TOOL_FIXTURES.map((fixture) => [fixture.tool.name, fixture] as const))(
    "%s: a casl tool's gate equals its REST route's @RequirePermissions",
    async (_, fixture) => {
      expect(gateParityViolations(fixture, await postureOf(fixture.tool))).toEqual([]);
    },
  );

  it('catches a casl gate that differs from the REST route', async () => {
    const fixture = TOOL_FIXTURES.find((candidate) => candidate.tool === createDepartmentTool)!;
    const drifted: ToolPosture<unknown> = { auth: 'casl', gate: { action: Action.UPDATE, resource: Resource.DEPARTMENT } };
    expect(gateParityViolations(fixture, drifted)).toEqual([
      'create_department: tool gate update:Department differs from REST create:Department',
    ]);
  });
});
