import { formatFiles, logger, type GeneratorCallback, type Tree } from '@nx/devkit';
import * as ts from 'typescript';
import { AGENT_TOOLS_SRC, readContract, type AgentToolContract } from './contract.js';
import {
  renderControllerSkeleton,
  renderDefinition,
  renderFixture,
  renderHandlerMethod,
  renderPayloadType,
  renderToolsFile,
  resultNeedsName,
  type ToolPlan,
} from './render.js';
import type { AgentToolGeneratorSchema } from './schema.js';
import { addNamedImports, appendClassMember, appendToArray, findDecoratedClass, insertStatementAfterLast } from './source-edit.js';

export const TOOLS_DIR = `${AGENT_TOOLS_SRC}/lib/tools`;
export const REGISTRY_FILE = `${AGENT_TOOLS_SRC}/lib/agent-tool-registry.ts`;
export const INDEX_FILE = `${AGENT_TOOLS_SRC}/index.ts`;
export const SERVER_TOOLS_DIR = 'apps/server/src/app/naalya-ai/tools';
export const MODULE_FILE = `${SERVER_TOOLS_DIR}/naalya-ai-tools.module.ts`;
export const FIXTURES_FILE = `${SERVER_TOOLS_DIR}/fixtures/tool-fixtures.ts`;

const SNAKE_CASE = /^[a-z]+(_[a-z]+)*$/;
const KEBAB_CASE = /^[a-z]+(-[a-z]+)*$/;

const toPascal = (words: readonly string[]) => words.map((word) => word[0].toUpperCase() + word.slice(1)).join('');

const list = (value: string | readonly string[] | undefined) =>
  value === undefined ? undefined : (typeof value === 'string' ? value.split(',') : value).map((item) => item.trim()).filter(Boolean);

/** A key of one of the libs/access objects, matched without regard to case (`list` finds `LIST`). */
const keyOf = (record: Record<string, string>, wanted: string) => Object.keys(record).find((key) => key === wanted.toUpperCase());

function refuse(message: string): never {
  throw new Error(`agent-tool: ${message}`);
}

const checkList = (flag: string, values: readonly string[] | undefined, allowed: readonly string[]) => {
  if (values === undefined) return undefined;
  if (values.length === 0) refuse(`--${flag} needs at least one of: ${allowed.join(', ')}.`);
  const unknown = values.filter((value) => !allowed.includes(value));
  if (unknown.length) refuse(`--${flag} has ${unknown.map((value) => `"${value}"`).join(', ')}; allowed: ${allowed.join(', ')}.`);
  if (new Set(values).size !== values.length) refuse(`--${flag} names a value twice.`);
  return values;
};

const resolveGate = (contract: AgentToolContract, gate: string) => {
  const parts = gate.split(':');
  if (parts.length !== 2) refuse(`--gate must be ACTION:RESOURCE, for example LIST:STAFF; got "${gate}".`);
  const [action, resource] = parts;
  const actionKey = keyOf(contract.actions, action);
  if (!actionKey) refuse(`--gate action "${action}" is not an Action in libs/access; one of: ${Object.keys(contract.actions).join(', ')}.`);
  const resourceKey = keyOf(contract.resources, resource);
  if (!resourceKey) {
    refuse(`--gate resource "${resource}" is not a Resource in libs/access; one of: ${Object.keys(contract.resources).join(', ')}.`);
  }
  return { action: actionKey, resource: resourceKey };
};

/** The audit row of a state-changing event: the flags, else the verb and the noun (or the gate's resource) when libs/access has them. */
const resolveAudit = (contract: AgentToolContract, options: AgentToolGeneratorSchema, event: string, gateResource?: string) => {
  const [verb, noun] = event.split('.');
  const actions = Object.keys(contract.auditActions).join(', ');
  const resourceTypes = Object.keys(contract.auditResourceTypes).join(', ');
  const action = options.auditAction
    ? (keyOf(contract.auditActions, options.auditAction) ??
      refuse(`--auditAction "${options.auditAction}" is not an ActionAuditAction in libs/access; one of: ${actions}.`))
    : (keyOf(contract.auditActions, verb) ??
      refuse(
        `"${event}" changes state, so its handler must pass audit, and libs/access has no ActionAuditAction for "${verb}". ` +
          `Pass --auditAction (one of: ${actions}), or add the action to libs/access/src/lib/audit.ts first.`,
      ));
  const resourceType = options.auditResource
    ? (keyOf(contract.auditResourceTypes, options.auditResource) ??
      refuse(`--auditResource "${options.auditResource}" is not an AuditResourceType in libs/access; one of: ${resourceTypes}.`))
    : (keyOf(contract.auditResourceTypes, noun.replaceAll('-', '_')) ??
      (gateResource && keyOf(contract.auditResourceTypes, gateResource)) ??
      refuse(
        `"${event}" changes state, so its handler must pass audit, and libs/access has no AuditResourceType for "${noun}". ` +
          `Pass --auditResource (one of: ${resourceTypes}), or add the resource type to libs/access/src/lib/audit.ts first.`,
      ));
  return { action, resourceType };
};

const toolsFileOf = (domain: string) => `${TOOLS_DIR}/${domain}.tools.ts`;
const controllerFileOf = (domain: string) => `${SERVER_TOOLS_DIR}/handlers/${domain}-tools.controller.ts`;
const fixtureFileOf = (plan: ToolPlan) => `${SERVER_TOOLS_DIR}/fixtures/${plan.kebab}.fixture.ts`;

/** Validates the options against the contract as the workspace holds it, and names everything the tool needs. */
export const planAgentTool = (tree: Tree, options: AgentToolGeneratorSchema): ToolPlan => {
  const contract = readContract(tree);
  const { name, event, domain } = options;
  if (!SNAKE_CASE.test(name ?? '')) refuse(`the tool name "${name}" must be snake_case (lowercase words joined by "_"), e.g. list_class_students.`);
  if (!contract.eventPattern.test(event ?? '')) {
    refuse(
      `the event "${event}" must be verb.kebab-noun (${contract.eventPattern}); verbs that change state: ` +
        `${contract.mutatingVerbs.join(', ')}; verbs that read: ${contract.readingVerbs.join(', ')}.`,
    );
  }
  // The model-facing name may say more than the event (list_my_classes for list.my-classes), but never another verb:
  // the verb is what classifies a call as a read or a write.
  const verb = event.split('.')[0];
  if (name.split('_')[0] !== verb) refuse(`the tool name must start with its event's verb: "${event}" gives "${verb}_...", not "${name}".`);
  if (!KEBAB_CASE.test(domain ?? '')) refuse(`--domain "${domain}" must be kebab-case, e.g. classes or lesson-plans.`);

  const roles = checkList('roles', list(options.roles), contract.roles);
  if (roles && options.shared) refuse('--shared and --roles exclude each other: a tool is on every belt, or on its roles\' belts.');
  const modes = checkList('modes', list(options.modes), contract.modes);

  let posture: ToolPlan['posture'];
  if (options.posture === 'casl') {
    if (!options.gate) refuse('a casl posture needs --gate=ACTION:RESOURCE, the @RequirePermissions pair of the REST route for the same operation.');
    posture = { auth: 'casl', gate: resolveGate(contract, options.gate) };
  } else if (options.posture === 'relationship') {
    if (options.gate) refuse('a relationship posture takes no --gate: the service checks who the caller is. Use --posture=casl for a permission gate.');
    posture = { auth: 'relationship' };
  } else {
    return refuse(`--posture must be casl or relationship; got "${options.posture}".`);
  }

  const mutating = contract.isMutatingEvent(event);
  if (!mutating && (options.auditAction || options.auditResource)) {
    refuse(`"${event}" only reads, so it writes no audit row: drop --auditAction and --auditResource.`);
  }
  const audit = mutating ? resolveAudit(contract, options, event, posture.auth === 'casl' ? posture.gate.resource : undefined) : undefined;

  if (contract.registered.some((tool) => tool.name === name)) refuse(`a tool named "${name}" is already registered in RPC_AGENT_TOOLS.`);
  if (contract.registered.some((tool) => tool.event === event)) refuse(`the event "${event}" is already registered in RPC_AGENT_TOOLS.`);

  const words = name.split('_');
  const camel = words[0] + toPascal(words.slice(1));
  const plan: ToolPlan = {
    name,
    event,
    mutating,
    camel,
    pascal: toPascal(words),
    kebab: words.join('-'),
    toolConst: `${camel}Tool`,
    fixtureConst: `${camel}Fixture`,
    payloadType: `${toPascal(words)}Payload`,
    domain: { kebab: domain, controllerClass: `${toPascal(domain.split('-'))}ToolsController` },
    posture,
    audit,
    roles,
    shared: Boolean(options.shared),
    modes,
    campusScoped: Boolean(options.campusScoped),
  };

  for (const file of tree.children(TOOLS_DIR)) {
    const source = tree.read(`${TOOLS_DIR}/${file}`, 'utf-8') ?? '';
    if (new RegExp(`\\b${plan.toolConst}\\b|name: '${name}'|event: '${event.replace('.', '\\.')}'`).test(source)) {
      refuse(`${TOOLS_DIR}/${file} already defines ${plan.toolConst}, "${name}" or "${event}".`);
    }
  }
  if (tree.exists(fixtureFileOf(plan))) refuse(`${fixtureFileOf(plan)} already exists.`);
  const controllerFile = controllerFileOf(domain);
  if (tree.exists(controllerFile)) {
    const controller = findDecoratedClass(controllerFile, tree.read(controllerFile, 'utf-8') ?? '', 'Controller');
    if (!controller) refuse(`${controllerFile} must hold exactly one @Controller() class to add the handler to.`);
    if (!controller.injected.has('ToolExecutor')) refuse(`${controller.name} in ${controllerFile} does not inject ToolExecutor.`);
    if (controller.members.includes(camel)) refuse(`${controller.name} already has a member named ${camel}.`);
  }
  return plan;
};

const update = (tree: Tree, file: string, change: (source: string) => string) => {
  const source = tree.read(file, 'utf-8');
  if (source === null) throw new Error(`agent-tool: ${file} does not exist in this workspace.`);
  tree.write(file, change(source));
};

const writeDefinition = (tree: Tree, plan: ToolPlan) => {
  const toolsFile = toolsFileOf(plan.domain.kebab);
  if (!tree.exists(toolsFile)) {
    tree.write(toolsFile, renderToolsFile(plan));
    // The package index exports each domain's definitions; the handler imports them from @naalya/agent-tools.
    update(tree, INDEX_FILE, (source) =>
      insertStatementAfterLast(
        INDEX_FILE,
        source,
        `export * from './lib/tools/${plan.domain.kebab}.tools.js';`,
        (node) => ts.isExportDeclaration(node),
        source.length,
      ),
    );
  } else {
    update(tree, toolsFile, (source) => {
      let updated = addNamedImports(toolsFile, source, 'zod', [{ name: 'z' }]);
      updated = addNamedImports(toolsFile, updated, '../define-agent-tool.js', [
        { name: 'defineAgentTool' },
        ...(plan.campusScoped ? [{ name: 'campusIdArg' }] : []),
      ]);
      if (resultNeedsName(plan)) updated = addNamedImports(toolsFile, updated, '../tool-result.js', [{ name: 'resultName' }]);
      return `${updated.replace(/\s*$/, '')}\n\n${renderDefinition(plan)}\n`;
    });
  }
  update(tree, REGISTRY_FILE, (source) =>
    appendToArray(
      REGISTRY_FILE,
      addNamedImports(REGISTRY_FILE, source, `./tools/${plan.domain.kebab}.tools.js`, [{ name: plan.toolConst }]),
      'RPC_AGENT_TOOLS',
      plan.toolConst,
    ),
  );
};

const writeHandler = (tree: Tree, plan: ToolPlan) => {
  const controllerFile = controllerFileOf(plan.domain.kebab);
  const isNew = !tree.exists(controllerFile);
  if (isNew) tree.write(controllerFile, renderControllerSkeleton(plan));
  update(tree, controllerFile, (source) => {
    let updated = addNamedImports(controllerFile, source, '@nestjs/common', [{ name: 'Controller' }, { name: 'NotImplementedException' }]);
    updated = addNamedImports(controllerFile, updated, '@nestjs/microservices', [{ name: 'MessagePattern' }, { name: 'Payload' }]);
    const access = [
      ...(plan.posture.auth === 'casl' ? ['Action', 'Resource'] : []),
      ...(plan.audit ? ['ActionAuditAction', 'AuditResourceType'] : []),
    ];
    if (access.length) updated = addNamedImports(controllerFile, updated, '@naalya/access', access.map((name) => ({ name })));
    updated = addNamedImports(controllerFile, updated, '@naalya/agent-tools', [
      { name: plan.toolConst },
      { name: 'AgentToolPayload', isType: true },
    ]);
    // planAgentTool checked an existing class; a new one is the skeleton's. Either has one @Controller() injecting ToolExecutor.
    const controller = findDecoratedClass(controllerFile, updated, 'Controller');
    const executor = controller?.injected.get('ToolExecutor');
    if (!controller || !executor) throw new Error(`agent-tool: ${controllerFile} has no @Controller() class injecting ToolExecutor.`);
    updated = insertStatementAfterLast(
      controllerFile,
      updated,
      renderPayloadType(plan),
      (node) => ts.isTypeAliasDeclaration(node) && node.name.text.endsWith('Payload'),
      controller.start,
    );
    return appendClassMember(controllerFile, updated, 'Controller', renderHandlerMethod(plan, executor));
  });
  if (isNew) {
    update(tree, MODULE_FILE, (source) =>
      appendToArray(
        MODULE_FILE,
        addNamedImports(MODULE_FILE, source, `./handlers/${plan.domain.kebab}-tools.controller.js`, [
          { name: plan.domain.controllerClass },
        ]),
        'TOOL_HANDLER_CONTROLLERS',
        plan.domain.controllerClass,
      ),
    );
  }
};

const writeFixture = (tree: Tree, plan: ToolPlan) => {
  tree.write(fixtureFileOf(plan), renderFixture(plan));
  update(tree, FIXTURES_FILE, (source) =>
    appendToArray(
      FIXTURES_FILE,
      addNamedImports(FIXTURES_FILE, source, `./${plan.kebab}.fixture.js`, [{ name: plan.fixtureConst }]),
      'TOOL_FIXTURES',
      plan.fixtureConst,
    ),
  );
};

/** `nx g @naalya/workspace-plugin:agent-tool`: the shared definition, its handler and its fixture, all registered. */
export const agentToolGenerator = async (tree: Tree, options: AgentToolGeneratorSchema): Promise<GeneratorCallback> => {
  const plan = planAgentTool(tree, options);
  writeDefinition(tree, plan);
  writeHandler(tree, plan);
  writeFixture(tree, plan);
  await formatFiles(tree);
  return () => {
    logger.info(
      [
        '',
        `${plan.name} is scaffolded, and npm test fails until you fill in:`,
        `  1. ${toolsFileOf(plan.domain.kebab)}: the description and the arguments of ${plan.toolConst}.`,
        `  2. ${controllerFileOf(plan.domain.kebab)}: inject the domain service (add its module to NaalyaAiToolsModule's imports)`,
        `     and replace the NotImplementedException with the REST route's service method and DTO${plan.audit ? ', and the audit resourceId' : ''}.`,
        `  3. ${fixtureFileOf(plan)}: allowed, denied with its refusal${plan.audit ? ', audit' : ''} and rest.`,
      ].join('\n'),
    );
  };
};

export default agentToolGenerator;
