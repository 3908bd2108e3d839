import type { AnyAgentTool } from '@naalya/agent-tools';
import { describe, expect, it, vi } from 'vitest';
import type { AgentToolCaller } from './agent-tool-caller.js';
import { buildAgentTools, buildRoleTools } from './build-agent-tools.js';

// The real registry has no tool with two roles and no role tool limited to a mode, so those placements are tested
// here with four probes beside the real tools that have no place of their own.
vi.mock('@naalya/agent-tools', async (importOriginal) => {
  const original = await importOriginal<typeof import('@naalya/agent-tools')>();
  const { withRegistryProbes } = await import('../../testing/probe-registry.fixture.js');
  const { z } = await import('zod');
  const { defineAgentTool } = original;
  const schema = z.strictObject({});
  // The worker passes a result on without reading it, so a probe's result can be anything.
  const result = z.unknown();
  const probes: AnyAgentTool[] = [
    defineAgentTool({ name: 'list_my_classes', event: 'list.my-classes', description: 'Probe.', schema, result, roles: ['class_teacher'] }),
    defineAgentTool({
      name: 'record_marks',
      event: 'record.marks',
      description: 'Probe.',
      schema,
      result,
      roles: ['subject_teacher', 'class_teacher'],
    }),
    defineAgentTool({
      name: 'approve_lesson_plan',
      event: 'approve.lesson-plan',
      description: 'Probe.',
      schema,
      result,
      roles: ['dos'],
      modes: ['school'],
    }),
    defineAgentTool({ name: 'get_branding', event: 'get.branding', description: 'Probe.', schema, result, shared: true }),
  ];
  return withRegistryProbes(original, probes);
});

const caller: AgentToolCaller = {
  timeoutMs: 1_000,
  call: async () => ({ error: 'not used', code: 'TOOL_FAILED' }),
};
const names = (belt: Array<{ name: string }>) => belt.map((beltTool) => beltTool.name);

describe('belt placement with role-tagged and shared tools', () => {
  it("Rover's belt excludes every role-tagged tool and keeps the shared one", () => {
    expect(names(buildAgentTools(caller, 'school'))).toEqual([
      'list_staff',
      'list_departments',
      'create_department',
      'delete_department',
      'add_department_member',
      'get_school_branding',
      'update_school_branding',
      'list_campuses',
      'get_branding',
      'clock',
      'get_agent_map',
      'ask_user',
    ]);
  });

  it("a role's belt has its own tools plus the shared one, and no other role's tools", () => {
    expect(names(buildRoleTools('class_teacher', caller, 'school'))).toEqual(['list_my_classes', 'record_marks', 'get_branding', 'ask_user']);
    expect(names(buildRoleTools('subject_teacher', caller, 'school'))).toEqual(['record_marks', 'get_branding', 'ask_user']);
    expect(names(buildRoleTools('dos', caller, 'school'))).toEqual(['approve_lesson_plan', 'get_branding', 'ask_user']);
  });

  it('a role tool is offered only in its modes', () => {
    expect(names(buildRoleTools('dos', caller, 'campus'))).toEqual(['get_branding', 'ask_user']);
  });
});
