import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';
import { AGENT_RUN_MODES, AGENT_TOOL_ROLES, EVENT_PATTERN, MUTATING_VERBS, READING_VERBS, RPC_AGENT_TOOLS } from '@naalya/agent-tools';
import { workspaceRoot, type Tree } from '@nx/devkit';
import { createTreeWithEmptyWorkspace } from '@nx/devkit/testing';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';
import { agentToolGenerator, FIXTURES_FILE, INDEX_FILE, MODULE_FILE, REGISTRY_FILE } from './agent-tool.js';
import { loadTreeModule, readContract } from './contract.js';
import { PLACEHOLDER_DESCRIPTION, PLACEHOLDER_RESULT_DESCRIPTION } from './render.js';
import type { AgentToolGeneratorSchema } from './schema.js';

// The real, current files the generator reads and edits, so every case runs against this repository.
const REPOSITORY_FOLDERS = ['libs/agent-tools/src', 'libs/access/src', 'apps/server/src/app/naalya-ai/tools'];
const REPOSITORY_FILES = ['libs/agent-tools/package.json', 'libs/access/package.json'];

const repositoryFiles = () =>
  [
    ...REPOSITORY_FOLDERS.flatMap((folder) =>
      readdirSync(path.join(workspaceRoot, folder), { recursive: true, encoding: 'utf-8' }).map((file) => path.posix.join(folder, file)),
    ),
    ...REPOSITORY_FILES,
  ].filter((file) => file.endsWith('.ts') || file.endsWith('.json'));

const repositoryTree = () => {
  const tree = createTreeWithEmptyWorkspace();
  for (const file of repositoryFiles()) tree.write(file, readFileSync(path.join(workspaceRoot, file), 'utf-8'));
  return tree;
};

const snapshot = (tree: Tree) => new Map(tree.listChanges().map((change) => [change.path, tree.read(change.path, 'utf-8')]));

/** The files a generation created or changed, compared with the tree before it. */
const changedFiles = (tree: Tree, before: Map<string, string | null>) =>
  tree
    .listChanges()
    .map((change) => change.path)
    .filter((file) => before.get(file) !== tree.read(file, 'utf-8'))
    .sort();

const read = (tree: Tree, file: string) => tree.read(file, 'utf-8') ?? '';

// A state-changing verb with no audit action of the same name, whatever libs/access holds today.
const VERB_WITHOUT_AUDIT = MUTATING_VERBS.find((verb) => !(verb.toUpperCase() in ActionAuditAction)) ?? 'submit';

const LIST_CLUB_MEMBERS: AgentToolGeneratorSchema = {
  name: 'list_club_members',
  event: 'list.club-members',
  domain: 'clubs',
  roles: 'class_teacher,dos',
  posture: 'relationship',
};

const CREATE_DEPARTMENT_NOTE: AgentToolGeneratorSchema = {
  name: 'create_department_note',
  event: 'create.department-note',
  domain: 'department-notes',
  roles: ['dos', 'class_teacher'],
  posture: 'casl',
  gate: 'CREATE:DEPARTMENT',
  campusScoped: true,
  modes: 'school,campus',
};

const UPDATE_DEPARTMENT: AgentToolGeneratorSchema = {
  name: 'update_department',
  event: 'update.department',
  domain: 'department',
  posture: 'casl',
  gate: 'update:department',
  shared: true,
};

const REMOVE_CLUB_MEMBER: AgentToolGeneratorSchema = {
  name: 'remove_club_member',
  event: 'remove.club-member',
  domain: 'clubs',
  posture: 'relationship',
  auditAction: 'DELETE',
  auditResource: 'DEPARTMENT_MEMBER',
};

/**
 * Type-checks the generated and edited files with the server's compiler options, the tree laid over the
 * repository on disk: the contract resolves to its source (the `@naalya/source` condition), so one
 * program covers the definition, the registry's payload types, the handler and the fixture.
 */
const typeErrors = (tree: Tree, before: Map<string, string | null>) => {
  const changed = new Map(changedFiles(tree, before).map((file) => [path.join(workspaceRoot, file), read(tree, file)]));
  const configPath = path.join(workspaceRoot, 'apps/server/tsconfig.spec.json');
  const config = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  if (!config) throw new Error(`Cannot read ${configPath}`);
  const options: ts.CompilerOptions = { ...config.options, noEmit: true, composite: false, incremental: false, declaration: false };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile } = host;
  host.fileExists = (fileName) => changed.has(fileName) || fileExists(fileName);
  host.readFile = (fileName) => changed.get(fileName) ?? readFile(fileName);
  host.getSourceFile = (fileName, languageVersion) => {
    const text = host.readFile(fileName);
    return text === undefined ? undefined : ts.createSourceFile(fileName, text, languageVersion, true);
  };
  const program = ts.createProgram({ rootNames: [...changed.keys()].filter((file) => file.endsWith('.ts')), options, host });
  return ts.getPreEmitDiagnostics(program).flatMap(({ file, start, messageText }) => {
    if (!file || !changed.has(file.fileName)) return [];
    const { line } = file.getLineAndCharacterOfPosition(start ?? 0);
    return [`${path.relative(workspaceRoot, file.fileName)}:${line + 1} ${ts.flattenDiagnosticMessageText(messageText, '\n')}`];
  });
};

describe('agent-tool generator', () => {
  it('scaffolds a relationship read in a new domain: definition, handler, fixture, each registered', async () => {
    const tree = repositoryTree();
    const before = snapshot(tree);
    await agentToolGenerator(tree, LIST_CLUB_MEMBERS);

    expect(changedFiles(tree, before)).toEqual(
      [
        INDEX_FILE,
        REGISTRY_FILE,
        'libs/agent-tools/src/lib/tools/clubs.tools.ts',
        MODULE_FILE,
        'apps/server/src/app/naalya-ai/tools/handlers/clubs-tools.controller.ts',
        'apps/server/src/app/naalya-ai/tools/fixtures/list-club-members.fixture.ts',
        FIXTURES_FILE,
      ].sort(),
    );
    expect(read(tree, 'libs/agent-tools/src/lib/tools/clubs.tools.ts')).toBe(
      `import { z } from 'zod';
import { defineAgentTool } from '../define-agent-tool.js';
import { resultName } from '../tool-result.js';

export const listClubMembersTool = defineAgentTool({
  name: 'list_club_members',
  event: 'list.club-members',
  description: '${PLACEHOLDER_DESCRIPTION}',
  schema: z.strictObject({}),
  result: z.array(z.strictObject({ id: z.guid(), name: resultName() })).describe('${PLACEHOLDER_RESULT_DESCRIPTION}'),
  roles: ['class_teacher', 'dos'],
});
`,
    );
    expect(read(tree, INDEX_FILE)).toContain("export * from './lib/tools/clubs.tools.js';\n");
    expect(read(tree, REGISTRY_FILE)).toContain("import { listClubMembersTool } from './tools/clubs.tools.js';");
    expect(read(tree, REGISTRY_FILE)).toMatch(/RPC_AGENT_TOOLS = \[[^\]]*\n {2}listClubMembersTool,\n\]/);
    expect(read(tree, 'apps/server/src/app/naalya-ai/tools/handlers/clubs-tools.controller.ts')).toBe(
      `import { Controller, NotImplementedException } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import { listClubMembersTool, type AgentToolPayload } from '@naalya/agent-tools';
import { ToolExecutor } from '../tool-executor.js';

export type ListClubMembersPayload = AgentToolPayload[typeof listClubMembersTool.event];

@Controller()
export class ClubsToolsController {
  constructor(private readonly executor: ToolExecutor) {}

  @MessagePattern(listClubMembersTool.event)
  listClubMembers(@Payload() payload: ListClubMembersPayload) {
    return this.executor.execute(
      payload,
      listClubMembersTool.schema,
      { auth: 'relationship' },
      async (dto, jwt) => {
        throw new NotImplementedException('list_club_members is scaffolded: call the domain service here.', {
          cause: { dto, actor: jwt.sub },
        });
      },
    );
  }
}
`,
    );
    expect(read(tree, MODULE_FILE)).toContain("import { ClubsToolsController } from './handlers/clubs-tools.controller.js';");
    expect(read(tree, MODULE_FILE)).toMatch(/TOOL_HANDLER_CONTROLLERS = \[[^\]]*\bClubsToolsController,?\s*\];/);
    const fixture = read(tree, 'apps/server/src/app/naalya-ai/tools/fixtures/list-club-members.fixture.ts');
    expect(fixture).toContain('export const listClubMembersFixture: ToolFixture = {');
    expect(fixture).toContain("throw new Error('Fill in the list_club_members fixture: a call that succeeds");
    expect(fixture).toContain(
      "throw new Error('Fill in the list_club_members fixture: a call by someone of the same school that the rules refuse, and its refusal (the error sentence it must get).');",
    );
    expect(fixture).toContain("method: 'GET'");
    expect(fixture).not.toContain('audit');
    expect(read(tree, FIXTURES_FILE)).toContain("import { listClubMembersFixture } from './list-club-members.fixture.js';");
    expect(read(tree, FIXTURES_FILE)).toMatch(/TOOL_FIXTURES: ToolFixture\[\] = \[[^\]]*\n {2}listClubMembersFixture,\n\]/);
  });

  it('scaffolds a casl state-changing tool with roles, modes and campus scope: gate, campusId argument (execute() pins it, not the handler) and audit row', async () => {
    const tree = repositoryTree();
    await agentToolGenerator(tree, CREATE_DEPARTMENT_NOTE);

    const definition = read(tree, 'libs/agent-tools/src/lib/tools/department-notes.tools.ts');
    expect(definition).toContain("import { campusIdArg, defineAgentTool } from '../define-agent-tool.js';");
    expect(definition).toContain(
      `  schema: z.strictObject({ campusId: campusIdArg }),
  result: z.strictObject({ id: z.guid(), name: resultName() }).describe('${PLACEHOLDER_RESULT_DESCRIPTION}'),
  roles: ['dos', 'class_teacher'],
  modes: ['school', 'campus'],
  campusScoped: true,
});`,
    );
    const controller = read(tree, 'apps/server/src/app/naalya-ai/tools/handlers/department-notes-tools.controller.ts');
    expect(controller).toContain("import { Action, ActionAuditAction, AuditResourceType, Resource } from '@naalya/access';");
    // Campus mode's pinning is execute()'s: the handler passes dto.campusId on as it is.
    expect(controller).not.toContain('pinned');
    expect(controller).toContain('export class DepartmentNotesToolsController {');
    expect(controller).toContain(
      `    return this.executor.execute(
      payload,
      createDepartmentNoteTool.schema,
      {
        auth: 'casl',
        gate: { action: Action.CREATE, resource: Resource.DEPARTMENT },
        audit: {
          action: ActionAuditAction.CREATE,
          resourceType: AuditResourceType.DEPARTMENT,
          resourceId: (result: { id: string }) => result.id,
        },
      },
      async (dto, jwt) => {
        throw new NotImplementedException('create_department_note is scaffolded: call the domain service here.', {
          cause: { dto, actor: jwt.sub },
        });
      },
    );`,
    );
    const fixture = read(tree, 'apps/server/src/app/naalya-ai/tools/fixtures/create-department-note.fixture.ts');
    expect(fixture).toContain(
      `  audit: {
    action: ActionAuditAction.CREATE,
    resourceType: AuditResourceType.DEPARTMENT,
    resourceId: (result) => (result as { id: string }).id,
  },`,
    );
    expect(fixture).toContain("method: 'POST'");
  });

  it('appends to an existing domain file and controller, keeping what is there', async () => {
    const tree = repositoryTree();
    const before = snapshot(tree);
    await agentToolGenerator(tree, UPDATE_DEPARTMENT);

    expect(changedFiles(tree, before)).toEqual(
      [
        REGISTRY_FILE,
        'libs/agent-tools/src/lib/tools/department.tools.ts',
        'apps/server/src/app/naalya-ai/tools/handlers/department-tools.controller.ts',
        'apps/server/src/app/naalya-ai/tools/fixtures/update-department.fixture.ts',
        FIXTURES_FILE,
      ].sort(),
    );
    const definitions = read(tree, 'libs/agent-tools/src/lib/tools/department.tools.ts');
    expect(definitions.startsWith(String(before.get('libs/agent-tools/src/lib/tools/department.tools.ts')).trimEnd())).toBe(true);
    expect(definitions).toMatch(/\n\nexport const updateDepartmentTool = defineAgentTool\(\{\n[^]*\n {2}shared: true,\n\}\);\n$/);

    const controllerFile = 'apps/server/src/app/naalya-ai/tools/handlers/department-tools.controller.ts';
    const controller = read(tree, controllerFile);
    expect(controller).toContain("import { Controller, NotImplementedException } from '@nestjs/common';");
    expect(controller).toMatch(/ {2}deleteDepartmentTool,\n {2}listDepartmentsTool,\n {2}updateDepartmentTool,\n {2}type AgentToolPayload,\n\}/);
    expect(controller).toContain(
      'export type AddDepartmentMemberPayload = AgentToolPayload[typeof addDepartmentMemberTool.event];\n' +
        'export type UpdateDepartmentPayload = AgentToolPayload[typeof updateDepartmentTool.event];\n',
    );
    // Every existing handler is still there, unchanged, and the new one comes last in the class.
    const body = (source: string) => source.slice(source.indexOf('@Controller()'));
    expect(body(controller).startsWith(body(String(before.get(controllerFile))).replace(/\n\}\n$/, ''))).toBe(true);
    expect(controller).toMatch(
      /\n {2}@MessagePattern\(updateDepartmentTool\.event\)\n {2}updateDepartment\(@Payload\(\) payload: UpdateDepartmentPayload\) \{\n[^]*audit: \{\n {10}action: ActionAuditAction\.UPDATE,\n {10}resourceType: AuditResourceType\.DEPARTMENT,[^]*\n {2}\}\n\}\n$/,
    );
  });

  it('appends a second tool to the domain files it created, with the audit row the flags name', async () => {
    const tree = repositoryTree();
    await agentToolGenerator(tree, LIST_CLUB_MEMBERS);
    const afterFirst = snapshot(tree);
    await agentToolGenerator(tree, REMOVE_CLUB_MEMBER);

    expect(changedFiles(tree, afterFirst)).toEqual(
      [
        REGISTRY_FILE,
        'libs/agent-tools/src/lib/tools/clubs.tools.ts',
        'apps/server/src/app/naalya-ai/tools/handlers/clubs-tools.controller.ts',
        'apps/server/src/app/naalya-ai/tools/fixtures/remove-club-member.fixture.ts',
        FIXTURES_FILE,
      ].sort(),
    );
    const controller = read(tree, 'apps/server/src/app/naalya-ai/tools/handlers/clubs-tools.controller.ts');
    expect(controller).toContain("import { ActionAuditAction, AuditResourceType } from '@naalya/access';");
    expect(controller).toContain("import { listClubMembersTool, removeClubMemberTool, type AgentToolPayload } from '@naalya/agent-tools';");
    expect(controller).toContain('action: ActionAuditAction.DELETE,\n          resourceType: AuditResourceType.DEPARTMENT_MEMBER,');
    expect(read(tree, MODULE_FILE).match(/ClubsToolsController/g)).toHaveLength(2);
    expect(read(tree, 'apps/server/src/app/naalya-ai/tools/fixtures/remove-club-member.fixture.ts')).toContain("method: 'POST'");
  });

  it('writes TypeScript that type-checks with the real contract, registry, server handlers and fixtures', async () => {
    const tree = repositoryTree();
    const before = snapshot(tree);
    for (const options of [LIST_CLUB_MEMBERS, CREATE_DEPARTMENT_NOTE, UPDATE_DEPARTMENT, REMOVE_CLUB_MEMBER]) {
      await agentToolGenerator(tree, options);
    }
    expect(typeErrors(tree, before)).toEqual([]);
  });

  it('writes definitions that load, register and are placed as asked', async () => {
    const tree = repositoryTree();
    for (const options of [LIST_CLUB_MEMBERS, CREATE_DEPARTMENT_NOTE, UPDATE_DEPARTMENT]) await agentToolGenerator(tree, options);
    const registry = loadTreeModule(tree, REGISTRY_FILE) as {
      RPC_AGENT_TOOLS: {
        name: string;
        description: string;
        schema: { safeParse: (value: unknown) => { success: boolean } };
        result: { description?: string; safeParse: (value: unknown) => { success: boolean } };
      }[];
      toolsForRole: (role: string, mode: string) => { name: string }[];
      toolsForMode: (mode: string) => { name: string }[];
    };
    const names = registry.RPC_AGENT_TOOLS.map((tool) => tool.name);
    expect(names.slice(-3)).toEqual(['list_club_members', 'create_department_note', 'update_department']);
    expect(registry.RPC_AGENT_TOOLS.slice(-3).map((tool) => tool.description)).toEqual(Array(3).fill(PLACEHOLDER_DESCRIPTION));
    const noteTool = registry.RPC_AGENT_TOOLS.find((tool) => tool.name === 'create_department_note');
    expect(noteTool?.schema.safeParse({}).success).toBe(true);
    expect(noteTool?.schema.safeParse({ smuggled: true }).success).toBe(false);
    // A result schema from the verb, with TODO copy the registry test refuses until the author writes the real shape.
    expect(registry.RPC_AGENT_TOOLS.slice(-3).map((tool) => tool.result.description)).toEqual(Array(3).fill(PLACEHOLDER_RESULT_DESCRIPTION));
    const row = { id: '6a59f99c-3fdb-4df7-b1bb-488c94eee95b', name: 'Chess' };
    const listTool = registry.RPC_AGENT_TOOLS.find((tool) => tool.name === 'list_club_members');
    expect([listTool?.result.safeParse([row]).success, listTool?.result.safeParse(row).success]).toEqual([true, false]);
    expect([noteTool?.result.safeParse(row).success, noteTool?.result.safeParse([row]).success]).toEqual([true, false]);
    expect(registry.toolsForRole('dos', 'school').map((tool) => tool.name)).toEqual(
      expect.arrayContaining(['list_club_members', 'create_department_note', 'update_department']),
    );
    const subjectTeacherBelt = registry.toolsForRole('subject_teacher', 'school').map((tool) => tool.name);
    expect(subjectTeacherBelt).toContain('update_department');
    expect(subjectTeacherBelt).not.toEqual(expect.arrayContaining(['list_club_members', 'create_department_note']));
  });

  it('reads the contract from the workspace, the same one the packages export', () => {
    const contract = readContract(repositoryTree());
    expect(contract.eventPattern.source).toBe(EVENT_PATTERN.source);
    expect(contract.mutatingVerbs).toEqual(MUTATING_VERBS);
    expect(contract.readingVerbs).toEqual(READING_VERBS);
    expect(contract.roles).toEqual(AGENT_TOOL_ROLES);
    expect(contract.modes).toEqual(AGENT_RUN_MODES);
    expect(contract.actions).toEqual(Action);
    expect(contract.resources).toEqual(Resource);
    expect(contract.auditActions).toEqual(ActionAuditAction);
    expect(contract.auditResourceTypes).toEqual(AuditResourceType);
    expect(contract.registered).toEqual(RPC_AGENT_TOOLS.map(({ name, event }) => ({ name, event })));
  });

  describe('refuses invalid input with a clear message, and writes nothing', () => {
    let tree: Tree;
    beforeAll(() => {
      tree = repositoryTree();
    });

    it.each<[string, Partial<AgentToolGeneratorSchema>, string]>([
      ['a name that is not snake_case', { name: 'listClubMembers' }, 'the tool name "listClubMembers" must be snake_case'],
      [
        'a name whose verb differs from the event',
        { name: 'get_club_members' },
        'the tool name must start with its event\'s verb: "list.club-members" gives "list_...", not "get_club_members"',
      ],
      ['an event with an unpublished verb', { name: 'fetch_club_members', event: 'fetch.club-members' }, 'the event "fetch.club-members" must be verb.kebab-noun'],
      ['an event that is not kebab-case', { name: 'list_club_members', event: 'list.club_members' }, 'must be verb.kebab-noun'],
      ['a domain that is not kebab-case', { domain: 'Classes' }, '--domain "Classes" must be kebab-case'],
      ['an unknown role', { roles: 'class_teacher,headmaster' }, '--roles has "headmaster"; allowed: class_teacher, subject_teacher, dos.'],
      ['an empty role list', { roles: ',' }, '--roles needs at least one of: class_teacher, subject_teacher, dos.'],
      ['--shared with --roles', { shared: true }, '--shared and --roles exclude each other'],
      ['an unknown mode', { modes: 'weekend' }, '--modes has "weekend"; allowed: school, campus.'],
      ['an unknown posture', { posture: 'trusted' }, '--posture must be casl or relationship; got "trusted".'],
      ['a casl posture without a gate', { posture: 'casl' }, 'a casl posture needs --gate=ACTION:RESOURCE'],
      ['a gate that is not ACTION:RESOURCE', { posture: 'casl', gate: 'LIST' }, '--gate must be ACTION:RESOURCE, for example LIST:STAFF; got "LIST".'],
      ['a gate with an unknown action', { posture: 'casl', gate: 'PEEK:STAFF' }, '--gate action "PEEK" is not an Action in libs/access'],
      ['a gate with an unknown resource', { posture: 'casl', gate: 'LIST:UNICORN' }, '--gate resource "UNICORN" is not a Resource in libs/access'],
      ['a relationship posture with a gate', { gate: 'LIST:STAFF' }, 'a relationship posture takes no --gate'],
      ['audit flags on a read', { auditAction: 'CREATE' }, '"list.club-members" only reads, so it writes no audit row'],
      [
        'a state-changing verb libs/access has no audit action for',
        { name: `${VERB_WITHOUT_AUDIT}_unicorn_stable`, event: `${VERB_WITHOUT_AUDIT}.unicorn-stable`, auditResource: 'DEPARTMENT' },
        `libs/access has no ActionAuditAction for "${VERB_WITHOUT_AUDIT}". Pass --auditAction`,
      ],
      [
        'a state-changing noun libs/access has no audit resource type for',
        { name: 'create_unicorn_stable', event: 'create.unicorn-stable' },
        'libs/access has no AuditResourceType for "unicorn-stable". Pass --auditResource',
      ],
      [
        'an unknown audit action',
        { name: 'create_unicorn_stable', event: 'create.unicorn-stable', auditAction: 'PLANT', auditResource: 'DEPARTMENT' },
        '--auditAction "PLANT" is not an ActionAuditAction in libs/access',
      ],
      [
        'an unknown audit resource type',
        { name: 'create_unicorn_stable', event: 'create.unicorn-stable', auditResource: 'PLANET' },
        '--auditResource "PLANET" is not an AuditResourceType in libs/access',
      ],
      ['a name already registered', { name: 'list_staff', event: 'list.staff', domain: 'staff' }, 'a tool named "list_staff" is already registered'],
    ])('%s', async (_, override, message) => {
      const before = snapshot(tree);
      await expect(agentToolGenerator(tree, { ...LIST_CLUB_MEMBERS, ...override })).rejects.toThrow(message);
      expect(changedFiles(tree, before)).toEqual([]);
    });

    it('a tool defined in a domain file but not yet registered', async () => {
      const defined = repositoryTree();
      const toolsFile = 'libs/agent-tools/src/lib/tools/department.tools.ts';
      defined.write(toolsFile, `${read(defined, toolsFile)}\nexport const listClubMembersTool = undefined;\n`);
      await expect(agentToolGenerator(defined, LIST_CLUB_MEMBERS)).rejects.toThrow(
        `${toolsFile} already defines listClubMembersTool, "list_club_members" or "list.club-members".`,
      );
    });
  });
});
