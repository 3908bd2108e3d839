// The text of everything the generator writes, already formatted as the repository is (2 spaces, single quotes, trailing commas).

export const PLACEHOLDER_DESCRIPTION = 'TODO: describe what this tool does for the model.';

export const PLACEHOLDER_RESULT_DESCRIPTION = 'TODO: what the handler returns.';

export type ToolPlan = {
  name: string;
  event: string;
  mutating: boolean;
  /** `listClassStudents`, `ListClassStudents`, `list-class-students`. */
  camel: string;
  pascal: string;
  kebab: string;
  toolConst: string;
  fixtureConst: string;
  payloadType: string;
  domain: { kebab: string; controllerClass: string };
  posture: { auth: 'casl'; gate: { action: string; resource: string } } | { auth: 'relationship' };
  /** Keys of ActionAuditAction and AuditResourceType; state-changing events only. */
  audit?: { action: string; resourceType: string };
  roles?: readonly string[];
  shared: boolean;
  modes?: readonly string[];
  campusScoped: boolean;
};

/**
 * A starting result schema from the verb (a list is an array of rows, a count a number, anything else one record),
 * with a TODO description the registry test refuses and an id not yet marked with what it is the id of: the author
 * writes the real shape, which the audit-fixture guard then checks against the fixture's result.
 */
const renderResult = (plan: ToolPlan) => {
  const verb = plan.event.split('.')[0];
  const row = 'z.strictObject({ id: z.guid(), name: resultName() })';
  const shape = verb === 'count' ? 'z.number().int()' : verb === 'list' || verb === 'search' ? `z.array(${row})` : row;
  return `  result: ${shape}.describe('${PLACEHOLDER_RESULT_DESCRIPTION}'),`;
};

/** True when the result the generator writes names a field with resultName, so the file must import it. */
export const resultNeedsName = (plan: ToolPlan) => !plan.event.startsWith('count.');

const quoted = (values: readonly string[]) => `[${values.map((value) => `'${value}'`).join(', ')}]`;

export const notImplementedMessage = (plan: ToolPlan) => `${plan.name} is scaffolded: call the domain service here.`;

export const fixtureMessage = (plan: ToolPlan, what: string) => `Fill in the ${plan.name} fixture: ${what}`;

export const renderDefinition = (plan: ToolPlan) =>
  [
    `export const ${plan.toolConst} = defineAgentTool({`,
    `  name: '${plan.name}',`,
    `  event: '${plan.event}',`,
    `  description: '${PLACEHOLDER_DESCRIPTION}',`,
    `  schema: z.strictObject({${plan.campusScoped ? ' campusId: campusIdArg ' : ''}}),`,
    renderResult(plan),
    ...(plan.roles ? [`  roles: ${quoted(plan.roles)},`] : []),
    ...(plan.shared ? ['  shared: true,'] : []),
    ...(plan.modes ? [`  modes: ${quoted(plan.modes)},`] : []),
    ...(plan.campusScoped ? ['  campusScoped: true,'] : []),
    '});',
  ].join('\n');

export const renderToolsFile = (plan: ToolPlan) =>
  [
    "import { z } from 'zod';",
    `import { ${plan.campusScoped ? 'campusIdArg, ' : ''}defineAgentTool } from '../define-agent-tool.js';`,
    ...(resultNeedsName(plan) ? ["import { resultName } from '../tool-result.js';"] : []),
    '',
    renderDefinition(plan),
    '',
  ].join('\n');

export const renderPayloadType = (plan: ToolPlan) =>
  `export type ${plan.payloadType} = AgentToolPayload[typeof ${plan.toolConst}.event];`;

const renderPosture = (plan: ToolPlan) => {
  const gate =
    plan.posture.auth === 'casl'
      ? `gate: { action: Action.${plan.posture.gate.action}, resource: Resource.${plan.posture.gate.resource} }`
      : undefined;
  if (!plan.audit) return [`      { auth: '${plan.posture.auth}'${gate ? `, ${gate}` : ''} },`];
  // The result type is a placeholder until the fn calls the service: resourceId then reads its real result.
  return [
    '      {',
    `        auth: '${plan.posture.auth}',`,
    ...(gate ? [`        ${gate},`] : []),
    '        audit: {',
    `          action: ActionAuditAction.${plan.audit.action},`,
    `          resourceType: AuditResourceType.${plan.audit.resourceType},`,
    '          resourceId: (result: { id: string }) => result.id,',
    '        },',
    '      },',
  ];
};

/** One `@MessagePattern(tool.event)` method that goes through execute(), indented for a class body. */
export const renderHandlerMethod = (plan: ToolPlan, executor: string) =>
  [
    `  @MessagePattern(${plan.toolConst}.event)`,
    `  ${plan.camel}(@Payload() payload: ${plan.payloadType}) {`,
    `    return this.${executor}.execute(`,
    '      payload,',
    `      ${plan.toolConst}.schema,`,
    ...renderPosture(plan),
    // A campus-scoped tool's dto.campusId is already the envelope's campus in campus mode: execute() pins it.
    '      async (dto, jwt) => {',
    `        throw new NotImplementedException('${notImplementedMessage(plan)}', {`,
    '          cause: { dto, actor: jwt.sub },',
    '        });',
    '      },',
    '    );',
    '  }',
  ].join('\n');

/** A new handler class: the method is added the same way as to an existing one. */
export const renderControllerSkeleton = (plan: ToolPlan) =>
  [
    "import { Controller } from '@nestjs/common';",
    "import { MessagePattern, Payload } from '@nestjs/microservices';",
    "import { type AgentToolPayload } from '@naalya/agent-tools';",
    "import { ToolExecutor } from '../tool-executor.js';",
    '',
    '@Controller()',
    `export class ${plan.domain.controllerClass} {`,
    '  constructor(private readonly executor: ToolExecutor) {}',
    '}',
    '',
  ].join('\n');

const restMethodOf = (plan: ToolPlan) => (!plan.mutating ? 'GET' : plan.event.startsWith('delete.') ? 'DELETE' : 'POST');

export const renderFixture = (plan: ToolPlan) =>
  [
    ...(plan.audit ? ["import { ActionAuditAction, AuditResourceType } from '@naalya/access';"] : []),
    `import { ${plan.toolConst} } from '@naalya/agent-tools';`,
    "import type { ToolFixture } from './tool-fixture.js';",
    '',
    '// Replace with the REST controller whose route runs the same service method with the same DTO.',
    'class RestRouteToSet {',
    '  setTheRestMethod() {',
    `    throw new Error('${fixtureMessage(plan, 'set rest.handler to the REST controller and method.')}');`,
    '  }',
    '}',
    '',
    `export const ${plan.fixtureConst}: ToolFixture = {`,
    `  tool: ${plan.toolConst},`,
    '  allowed: async () => {',
    `    throw new Error('${fixtureMessage(plan, 'a call that succeeds, with the rows it needs made as the owner.')}');`,
    '  },',
    '  denied: async () => {',
    `    throw new Error('${fixtureMessage(plan, 'a call by someone of the same school that the rules refuse, and its refusal (the error sentence it must get).')}');`,
    '  },',
    ...(plan.audit
      ? [
          '  audit: {',
          `    action: ActionAuditAction.${plan.audit.action},`,
          `    resourceType: AuditResourceType.${plan.audit.resourceType},`,
          '    resourceId: (result) => (result as { id: string }).id,',
          '  },',
        ]
      : []),
    '  rest: {',
    `    method: '${restMethodOf(plan)}',`,
    '    path: () => {',
    `      throw new Error('${fixtureMessage(plan, 'set rest.path to the REST route of the same operation.')}');`,
    '    },',
    "    handler: [RestRouteToSet, 'setTheRestMethod'],",
    '  },',
    '};',
    '',
  ].join('\n');
