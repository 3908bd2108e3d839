import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  EM_DASH,
  EVENT_PATTERN,
  MUTATING_VERBS,
  READING_VERBS,
  defineAgentTool,
  isMutatingEvent,
  requiresConfirmation,
  type AnyAgentTool,
} from './define-agent-tool.js';
import { RPC_AGENT_TOOLS, toolsForMode, toolsForRole } from './agent-tool-registry.js';
import { eligibleAgentRoles } from './agent-tool-role.js';

const IDENTITY_FIELDS = ['schoolId', 'userId', 'sub', 'type'];
const tools: readonly AnyAgentTool[] = RPC_AGENT_TOOLS;

/** Every key a schema accepts, at any depth, so nested identity fields are caught too. */
const schemaKeys = (schema: z.ZodType): string[] => {
  const json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  const keys: string[] = [];
  const walk = (node: unknown) => {
    if (!node || typeof node !== 'object') return;
    const properties = (node as { properties?: Record<string, unknown> }).properties;
    if (properties) keys.push(...Object.keys(properties));
    Object.values(node).forEach(walk);
  };
  walk(json);
  return keys;
};

/** Copy that still says TODO, as a freshly scaffolded tool's description, arguments and result schema do. */
const hasPlaceholderCopy = (tool: AnyAgentTool) =>
  /\bTODO\b/.test(`${tool.description} ${JSON.stringify(z.toJSONSchema(tool.schema))} ${tool.result.description ?? ''}`);

describe('RPC_AGENT_TOOLS', () => {
  it('has unique names and unique events', () => {
    expect(new Set(tools.map((tool) => tool.name)).size).toBe(tools.length);
    expect(new Set(tools.map((tool) => tool.event)).size).toBe(tools.length);
  });

  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: event matches EVENT_PATTERN and the name starts with its verb', (_, tool) => {
    expect(tool.event).toMatch(EVENT_PATTERN);
    expect(tool.name).toMatch(/^[a-z]+(_[a-z]+)*$/);
    // The name may say more than the event (list_my_teaching_assignments for list.teaching-assignments), never another verb.
    expect(tool.name.split('_')[0]).toBe(tool.event.split('.')[0]);
  });

  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: no em dash in the description or argument copy', (_, tool) => {
    expect(tool.description).not.toContain(EM_DASH);
    expect(JSON.stringify(z.toJSONSchema(tool.schema))).not.toContain(EM_DASH);
  });

  // `nx g @naalya/workspace-plugin:agent-tool` writes TODO copy, so a scaffolded tool fails here until it is described.
  it('no tool description, argument copy or result schema is a TODO placeholder', () => {
    expect(tools.filter(hasPlaceholderCopy).map((tool) => tool.name)).toEqual([]);
  });

  it('catches a TODO placeholder in the description, in argument copy or on the result schema', () => {
    const probe = { name: 'list_probe', event: 'list.probe', description: 'Probe.', schema: z.strictObject({}), result: z.unknown() } as const;
    expect(hasPlaceholderCopy(defineAgentTool({ ...probe, description: 'TODO: describe what this tool does for the model.' }))).toBe(true);
    expect(hasPlaceholderCopy(defineAgentTool({ ...probe, schema: z.strictObject({ day: z.string().describe('TODO') }) }))).toBe(true);
    expect(hasPlaceholderCopy(defineAgentTool({ ...probe, result: z.unknown().describe('TODO: what the handler returns.') }))).toBe(true);
    expect(hasPlaceholderCopy(defineAgentTool(probe))).toBe(false);
  });

  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: the schema exposes no identity field', (_, tool) => {
    expect(schemaKeys(tool.schema).filter((key) => IDENTITY_FIELDS.includes(key))).toEqual([]);
  });

  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: takes campusId exactly when campus-scoped, and optional', (_, tool) => {
    const shape = tool.schema.shape as Record<string, z.ZodType>;
    expect('campusId' in shape).toBe(Boolean(tool.campusScoped));
    if (tool.campusScoped) expect(shape['campusId'].safeParse(undefined).success).toBe(true);
  });

  it.each(tools.map((tool) => [tool.name, tool] as const))('%s: a strict schema, so unknown keys are refused', (_, tool) => {
    expect(tool.schema.safeParse({ smuggled: true }).success).toBe(false);
  });

  it('the tools whose effect the user must confirm call by call do', () => {
    expect(tools.filter(requiresConfirmation).map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['delete_department', 'approve_lesson_plan', 'assign_subject_teacher']),
    );
  });

  it.each(tools.filter(requiresConfirmation).map((tool) => [tool.name, tool] as const))(
    '%s: only a write asks for confirmation, and only arguments of its own schema are editable',
    (_, tool) => {
      expect(isMutatingEvent(tool.event)).toBe(true);
      const shape = tool.schema.shape as Record<string, z.ZodType>;
      for (const name of tool.confirm?.editable ?? []) expect(Object.keys(shape)).toContain(name);
    },
  );

  it('is never both shared and role-tagged', () => {
    expect(tools.filter((tool) => tool.shared && (tool.roles as readonly string[] | undefined)?.length)).toEqual([]);
  });
});

describe('isMutatingEvent', () => {
  it('classifies by the published verb lists', () => {
    for (const verb of MUTATING_VERBS) expect(isMutatingEvent(`${verb}.thing`)).toBe(true);
    for (const verb of READING_VERBS) expect(isMutatingEvent(`${verb}.thing`)).toBe(false);
  });

  it('refuses events with an unpublished verb or a bad shape', () => {
    for (const event of ['fetch.staff', 'create', 'create.Department', 'create.department_', 'list.my--classes']) {
      expect(event).not.toMatch(EVENT_PATTERN);
    }
  });
});

describe('tool placement', () => {
  const names = (placed: readonly AnyAgentTool[]) => placed.map((tool) => tool.name);
  const roleTool = defineAgentTool({
    name: 'list_probe',
    event: 'list.probe',
    description: 'probe',
    schema: z.strictObject({}),
    result: z.unknown(),
    roles: ['class_teacher'],
    modes: ['campus'],
  });

  it('offers a tool only in its modes', () => {
    expect(names(toolsForMode('school', [...RPC_AGENT_TOOLS, roleTool]))).not.toContain('list_probe');
    expect(names(toolsForMode('campus', [...RPC_AGENT_TOOLS, roleTool]))).toContain('list_probe');
    expect(names(toolsForRole('class_teacher', 'school', [roleTool]))).toEqual([]);
    expect(names(toolsForRole('class_teacher', 'campus', [roleTool]))).toEqual(['list_probe']);
    // In the registry, list_campuses is the one tool limited to a mode (school): a campus chat lists no campuses.
    expect(names(toolsForMode('school'))).toContain('list_campuses');
    expect(names(toolsForMode('campus'))).not.toContain('list_campuses');
  });

  it('gives each role its tools plus the shared ones', () => {
    expect(names(tools.filter((tool) => tool.shared))).toEqual(['list_subjects', 'get_tool_call_outcome']);
    expect(names(toolsForRole('class_teacher', 'school'))).toEqual([
      'list_subjects',
      'list_my_classes',
      'list_class_students',
      'record_attendance',
      'get_tool_call_outcome',
    ]);
    expect(names(toolsForRole('subject_teacher', 'school'))).toEqual([
      'list_subjects',
      'list_my_teaching_assignments',
      'get_gradebook',
      'record_marks',
      'create_lesson_plan',
      'list_lesson_plans',
      'get_tool_call_outcome',
    ]);
    expect(names(toolsForRole('dos', 'school'))).toEqual([
      'list_subjects',
      'list_class_students',
      'assign_subject_teacher',
      'get_results_summary',
      'list_pending_lesson_plans',
      'approve_lesson_plan',
      'get_tool_call_outcome',
    ]);
  });
});

describe('eligibleAgentRoles', () => {
  it('returns the roles in registration order', () => {
    expect(eligibleAgentRoles({ isClassTeacher: true, isSubjectTeacher: true, isDirectorOfStudies: true })).toEqual([
      'class_teacher',
      'subject_teacher',
      'dos',
    ]);
    expect(eligibleAgentRoles({ isClassTeacher: false, isSubjectTeacher: true, isDirectorOfStudies: true })).toEqual([
      'subject_teacher',
      'dos',
    ]);
    expect(eligibleAgentRoles({ isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: false })).toEqual([]);
  });
});
