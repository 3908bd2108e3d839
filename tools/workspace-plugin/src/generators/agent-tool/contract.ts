import { joinPathFragments, workspaceRoot, type Tree } from '@nx/devkit';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import * as vm from 'node:vm';
import * as ts from 'typescript';

export const AGENT_TOOLS_SRC = 'libs/agent-tools/src';
export const ACCESS_SRC = 'libs/access/src';

type ModuleExports = Record<string, unknown>;

/** The workspace package a bare specifier names, when the tree holds its source (the `@naalya/source` export). */
const workspacePackageSource = (tree: Tree, specifier: string): string | undefined => {
  for (const folder of ['libs', 'apps']) {
    for (const child of tree.children(folder)) {
      const manifestPath = joinPathFragments(folder, child, 'package.json');
      if (!tree.isFile(manifestPath)) continue;
      const manifest = JSON.parse(tree.read(manifestPath, 'utf-8') ?? '{}') as { name?: string; exports?: Record<string, unknown> };
      if (manifest.name !== specifier) continue;
      const root = manifest.exports?.['.'] as Record<string, string> | undefined;
      const source = root?.['@naalya/source'];
      return source ? joinPathFragments(folder, child, source) : undefined;
    }
  }
  return undefined;
};

const resolveRelative = (tree: Tree, from: string, specifier: string): string => {
  const target = path.posix.join(path.posix.dirname(from), specifier);
  const candidates = [target.replace(/\.js$/, '.ts'), target, `${target}.ts`, `${target}/index.ts`];
  const found = candidates.find((candidate) => tree.isFile(candidate));
  if (!found) throw new Error(`Cannot resolve '${specifier}' from ${from} in the workspace.`);
  return found;
};

/**
 * Evaluates a TypeScript module of the workspace as the tree holds it, with its relative and
 * workspace imports read from the tree too. The generator reads the contract this way rather than
 * importing the packages: their `dist` is missing before a build and stale while someone edits the
 * source, and the generator must agree with the files it is about to edit.
 */
export const loadTreeModule = (tree: Tree, entry: string): ModuleExports => {
  const modules = new Map<string, { exports: ModuleExports }>();
  const requireInstalled = createRequire(path.join(workspaceRoot, 'package.json'));
  const load = (file: string): ModuleExports => {
    const cached = modules.get(file);
    if (cached) return cached.exports;
    const source = tree.read(file, 'utf-8');
    if (source === null) throw new Error(`${file} does not exist in this workspace.`);
    const module = { exports: {} as ModuleExports };
    modules.set(file, module);
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    });
    const requireFromFile = (specifier: string): unknown => {
      if (specifier.startsWith('.')) return load(resolveRelative(tree, file, specifier));
      const workspaceSource = workspacePackageSource(tree, specifier);
      return workspaceSource ? load(workspaceSource) : requireInstalled(specifier);
    };
    const run = vm.runInThisContext(`(function (exports, require, module) {${outputText}\n})`, {
      filename: path.join(tree.root, file),
    }) as (exports: ModuleExports, require: (specifier: string) => unknown, module: { exports: ModuleExports }) => void;
    run(module.exports, requireFromFile, module);
    return module.exports;
  };
  return load(entry);
};

/** What the generator needs to know about the contract, read from the workspace it generates into. */
export type AgentToolContract = {
  eventPattern: RegExp;
  isMutatingEvent: (event: string) => boolean;
  mutatingVerbs: readonly string[];
  readingVerbs: readonly string[];
  roles: readonly string[];
  modes: readonly string[];
  /** Key to value, e.g. `LIST` to `list`. */
  actions: Record<string, string>;
  resources: Record<string, string>;
  auditActions: Record<string, string>;
  auditResourceTypes: Record<string, string>;
  registered: readonly { name: string; event: string }[];
};

const exported = <T>(module: ModuleExports, name: string, file: string, check: (value: unknown) => boolean): T => {
  const value = module[name];
  if (!check(value)) throw new Error(`${file} no longer exports ${name} in the shape the agent-tool generator reads; update the generator.`);
  return value as T;
};

const isStringArray = (value: unknown) => Array.isArray(value) && value.every((item) => typeof item === 'string');
const isStringRecord = (value: unknown) =>
  typeof value === 'object' && value !== null && Object.values(value).every((item) => typeof item === 'string');

export const readContract = (tree: Tree): AgentToolContract => {
  const defineFile = `${AGENT_TOOLS_SRC}/lib/define-agent-tool.ts`;
  const roleFile = `${AGENT_TOOLS_SRC}/lib/agent-tool-role.ts`;
  const registryFile = `${AGENT_TOOLS_SRC}/lib/agent-tool-registry.ts`;
  const accessFile = `${ACCESS_SRC}/index.ts`;
  const define = loadTreeModule(tree, defineFile);
  const role = loadTreeModule(tree, roleFile);
  const registry = loadTreeModule(tree, registryFile);
  const access = loadTreeModule(tree, accessFile);
  const tools = exported<readonly { name: unknown; event: unknown }[]>(registry, 'RPC_AGENT_TOOLS', registryFile, Array.isArray);
  return {
    eventPattern: exported(define, 'EVENT_PATTERN', defineFile, (value) => value instanceof RegExp),
    isMutatingEvent: exported(define, 'isMutatingEvent', defineFile, (value) => typeof value === 'function'),
    mutatingVerbs: exported(define, 'MUTATING_VERBS', defineFile, isStringArray),
    readingVerbs: exported(define, 'READING_VERBS', defineFile, isStringArray),
    modes: exported(define, 'AGENT_RUN_MODES', defineFile, isStringArray),
    roles: exported(role, 'AGENT_TOOL_ROLES', roleFile, isStringArray),
    actions: exported(access, 'Action', accessFile, isStringRecord),
    resources: exported(access, 'Resource', accessFile, isStringRecord),
    auditActions: exported(access, 'ActionAuditAction', accessFile, isStringRecord),
    auditResourceTypes: exported(access, 'AuditResourceType', accessFile, isStringRecord),
    registered: tools.map((tool) => ({ name: String(tool.name), event: String(tool.event) })),
  };
};
