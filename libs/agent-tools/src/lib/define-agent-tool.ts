import { z } from 'zod';
import type { AgentToolRole } from './agent-tool-role.js';
import type { ResultView } from './tool-result.js';

/** The em dash character; agent-facing copy must not contain it. */
export const EM_DASH = '\u2014';

/** Agent-facing copy without the em dash (the model must not learn the character from us); also what a person is asked. */
export const withoutEmDash = (text: string): string => text.replaceAll(` ${EM_DASH} `, ', ').replaceAll(EM_DASH, ', ');

/** Verbs whose events change state; every such call is audited and goes through the idempotency ledger. */
export const MUTATING_VERBS = [
  'create', 'update', 'delete', 'assign', 'unassign', 'add', 'remove', 'record', 'approve', 'reject', 'submit',
] as const;

/** Verbs whose events only read. */
export const READING_VERBS = ['list', 'get', 'search', 'count'] as const;

export type MutatingVerb = (typeof MUTATING_VERBS)[number];
export type ReadingVerb = (typeof READING_VERBS)[number];

/** `verb.kebab-noun`, for example `add.department-member`; the verb must be one of the published lists. */
export const EVENT_PATTERN = new RegExp(
  `^(${[...MUTATING_VERBS, ...READING_VERBS].join('|')})\\.[a-z]+(-[a-z]+)*$`,
);

/** A RabbitMQ pattern of a tool: its verb is checked by the type, its shape by EVENT_PATTERN. */
export type AgentToolEventName = `${MutatingVerb | ReadingVerb}.${string}`;

/** True when the event's verb changes state. Classification is by verb only, never by opinion. */
export const isMutatingEvent = (event: string): boolean =>
  (MUTATING_VERBS as readonly string[]).includes(event.split('.')[0] ?? '');

/** Run modes: the whole school, or pinned to one campus. */
export const AGENT_RUN_MODES = ['school', 'campus'] as const;
export type AgentRunModeName = (typeof AGENT_RUN_MODES)[number];

/** What the worker streams to the client after a successful call (the proxy adds the audit id). */
export type AgentStreamEvent = {
  name: string;
  label: string;
  resourceType?: string;
  resourceId?: string;
  auditId?: string;
};

type ToolPlacement =
  | { roles?: undefined; shared?: true }
  | { roles: readonly [AgentToolRole, ...AgentToolRole[]]; shared?: undefined };

/**
 * A shared tool definition: the model-facing name, the RabbitMQ event, the zod schema of its arguments and the zod
 * schema of what its handler returns.
 */
export type AgentToolDefinition<
  Name extends string = string,
  Event extends AgentToolEventName = AgentToolEventName,
  Schema extends z.ZodObject = z.ZodObject,
  Result extends z.ZodType = z.ZodType,
> = {
  name: Name;
  event: Event;
  description: string;
  schema: Schema;
  /**
   * The `data` of a successful result as it travels (JSON: dates are ISO strings), with its ids and names marked
   * (resultId, resultName) so a client can render it for a person. The audit-fixture guard parses every fixture's
   * result with it; the model and REST clients still get the handler's result unchanged.
   */
  result: Result;
  /** A better view than the one the result's shape gives (array: table, object: record), for example a grid. */
  view?: ResultView;
  modes?: readonly AgentRunModeName[];
  campusScoped?: true;
  streamOnSuccess?: (args: z.output<Schema>) => AgentStreamEvent | undefined;
  /**
   * Set on a tool the user must confirm call by call. The question is not written here from the model's arguments
   * (which can only name ids): the worker asks the server to render it from the records as the caller may see them (a
   * preview through the call's own handler and gate), asks it, and the server runs the call only with the user's
   * approval of exactly these arguments.
   */
  confirm?: ConfirmationSpec<Schema>;
} & ToolPlacement;

/** How a confirmable tool is confirmed; `editable` names the arguments the person may change before approving. */
export type ConfirmationSpec<Schema extends z.ZodObject = z.ZodObject> = {
  editable?: readonly (keyof z.output<Schema> & string)[];
};

/** Any tool definition, whatever its schema. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the registry holds tools of every schema
export type AnyAgentTool = AgentToolDefinition<string, AgentToolEventName, any, z.ZodType>;

/** True when each call of the tool needs the user's approval of its exact arguments. */
export const requiresConfirmation = (definition: AnyAgentTool): boolean => definition.confirm !== undefined;

/** Declares one tool; the literal name and event types are kept so payloads can be typed per event. */
export const defineAgentTool = <
  const Name extends string,
  const Event extends AgentToolEventName,
  Schema extends z.ZodObject,
  Result extends z.ZodType,
>(
  definition: AgentToolDefinition<Name, Event, Schema, Result>,
): AgentToolDefinition<Name, Event, Schema, Result> => Object.freeze(definition);

/** The optional campus argument of a campus-scoped tool; campus mode pins it from the envelope. */
export const campusIdArg = z
  .guid()
  .optional()
  .describe('Campus to act in. Leave it out to use the whole school, or the campus this chat is pinned to.');
