import { RPC_AGENT_TOOLS, type AgentRunModeName, type AgentToolRole, type AnyAgentTool } from '@naalya/agent-tools';
import { describe, expect, it, vi } from 'vitest';
import type { AgentToolCaller } from './agent-tool-caller.js';
import { buildAgentTools, buildRoleTools } from './build-agent-tools.js';

// The real registry has no role-tagged or shared tool yet, so belt placement would be tested
// vacuously. This suite runs the same code against the real registry plus four probes.
vi.mock('@naalya/agent-tools', async (importOriginal) => {
  const original = await importOriginal<typeof import('@naalya/agent-tools')>();
  const { z } = await import('zod');
  const { defineAgentTool } = original;
  const schema = z.strictObject({});
  // The real tools that have a place of their own (roles or shared) are left out, so the probes alone are placed here
  // however the registry grows.
  const registry: AnyAgentTool[] = [
    ...original.RPC_AGENT_TOOLS.filter((definition: AnyAgentTool) => !definition.roles?.length && !definition.shared),
    defineAgentTool({ name: 'list_my_classes', event: 'list.my-classes', description: 'Probe.', schema, roles: ['class_teacher'] }),
    defineAgentTool({
      name: 'record_marks',
      event: 'record.marks',
      description: 'Probe.',
      schema,
      roles: ['subject_teacher', 'class_teacher'],
    }),
    defineAgentTool({
      name: 'approve_lesson_plan',
      event: 'approve.lesson-plan',
      description: 'Probe.',
      schema,
      roles: ['dos'],
      modes: ['school'],
    }),
    defineAgentTool({ name: 'get_branding', event: 'get.branding', description: 'Probe.', schema, shared: true }),
  ];
  const toolsForMode = (mode: AgentRunModeName) =>
    registry.filter((definition) => !definition.modes || definition.modes.includes(mode));
  const toolsForRole = (role: AgentToolRole, mode: AgentRunModeName) =>
    toolsForMode(mode).filter((definition) => definition.shared || definition.roles?.includes(role));
  return { ...original, RPC_AGENT_TOOLS: registry, toolsForMode, toolsForRole };
});

const caller: AgentToolCaller = {
  timeoutMs: 1_000,
  call: async () => ({ error: 'not used', code: 'TOOL_FAILED' }),
};
const names = (belt: Array<{ name: string }>) => belt.map((beltTool) => beltTool.name);
// The real registry grows as tools land; the probes below are what this suite places.
const PROBES = new Set(['list_my_classes', 'record_marks', 'approve_lesson_plan', 'get_branding']);
const REGISTRY_TOOLS = RPC_AGENT_TOOLS.map((definition: AnyAgentTool) => definition.name).filter((name: string) => !PROBES.has(name));

describe('belt placement with role-tagged and shared tools', () => {
  it("Rover's belt excludes every role-tagged tool and keeps the shared one", () => {
    expect(names(buildAgentTools(caller, 'school'))).toEqual([...REGISTRY_TOOLS, 'get_branding', 'clock', 'get_agent_map', 'ask_user']);
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
