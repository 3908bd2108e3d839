import { z } from 'zod';

/**
 * How a client lays a tool's result out for a person: a list as a table, one thing as a short record, a matrix
 * (a gradebook, a register) as a grid, a bare value as text. Only names: the renderers live in the client.
 */
export const RESULT_VIEWS = ['table', 'record', 'grid', 'text'] as const;
export type ResultView = (typeof RESULT_VIEWS)[number];

/** The kinds of thing a result field can be the id of, so a client can make an id a link rather than a column. */
export const RESULT_RESOURCES = [
  'school',
  'campus',
  'staff',
  'user',
  'department',
  'subject',
  'class',
  'student',
  'term',
  'teaching_assignment',
  'lesson_plan',
  'tool_call',
] as const;
export type ResultResource = (typeof RESULT_RESOURCES)[number];

/** What one field of a result is to a reader: the id of something, or a name a person reads instead of that id. */
export type ResultFieldMeta = { role: 'id'; resource: ResultResource } | { role: 'name' };

/**
 * Field roles live in their own registry, not in `.describe()` text: a client reads them as data, and zod's global
 * registry (what JSON Schema export reads) stays free of client concerns.
 */
export const resultFields = z.registry<ResultFieldMeta>();

/**
 * The id of a resource in a result: shown one click away, not as a column of uuids. A uuid unless `format` says
 * otherwise (a tool call's id is the worker's, not a uuid).
 */
export const resultId = <Format extends z.ZodString | z.ZodGUID = z.ZodGUID>(resource: ResultResource, format?: Format) =>
  ((format ?? z.guid()) as Format).register(resultFields, { role: 'id', resource });

/** A name a person reads (a department's name, a student's full name): what a table leads with instead of ids. */
export const resultName = () => z.string().register(resultFields, { role: 'name' });

// Optional, nullable and default wrap the schema that carries the shape and the field's role; both are read through them.
const unwrap = (schema: z.ZodType): z.ZodType =>
  schema instanceof z.ZodOptional || schema instanceof z.ZodNullable || schema instanceof z.ZodDefault
    ? unwrap(schema.unwrap() as z.ZodType)
    : schema;

/** The view a result gets when its tool names none, from the shape alone: an array is a table, an object a record. */
export const defaultResultView = (result: z.ZodType): ResultView => {
  const shape = unwrap(result);
  if (shape instanceof z.ZodArray) return 'table';
  if (shape instanceof z.ZodObject) return 'record';
  return 'text';
};

/** A tool's view: the one it names, or the default of its result's shape. */
export const resultViewOf = (tool: { result: z.ZodType; view?: ResultView }): ResultView => tool.view ?? defaultResultView(tool.result);

export type ResultField = { key: string } & ({ role: 'id'; resource: ResultResource } | { role: 'name' } | { role: 'value' });

/**
 * The fields of a table's row (an array's element) or of a record, in declared order, each with its role: what a
 * renderer needs to lead with names and keep ids one click away. Empty for a result that is neither.
 */
export const resultFieldsOf = (result: z.ZodType): ResultField[] => {
  let shape = unwrap(result);
  if (shape instanceof z.ZodArray) shape = unwrap(shape.element as z.ZodType);
  if (!(shape instanceof z.ZodObject)) return [];
  return Object.entries(shape.shape as Record<string, z.ZodType>).map(([key, field]) => {
    const meta = resultFields.get(unwrap(field));
    return meta ? { key, ...meta } : { key, role: 'value' };
  });
};

/** The JSON a result travels as (RabbitMQ, REST): dates are ISO strings there, which is what a result schema describes. */
export const resultOnTheWire = (data: unknown): unknown => (data === undefined ? undefined : JSON.parse(JSON.stringify(data)));

// A list whose rows all drift repeats one issue per row: the first few say what is wrong, the count how widely.
const SHOWN_ISSUES = 3;

const describeIssues = (issues: readonly { path: PropertyKey[]; message: string }[]): string => {
  const shown = issues
    .slice(0, SHOWN_ISSUES)
    .map((issue) => (issue.path.length ? `${issue.path.map(String).join('.')}: ${issue.message}` : issue.message));
  return [...shown, ...(issues.length > SHOWN_ISSUES ? [`and ${issues.length - SHOWN_ISSUES} more`] : [])].join('; ');
};

/** Why a handler's result, as it travels, does not match its tool's result schema; undefined when it does. */
export const resultMismatch = (tool: { result: z.ZodType }, data: unknown): string | undefined => {
  const parsed = tool.result.safeParse(resultOnTheWire(data));
  return parsed.success ? undefined : describeIssues(parsed.error.issues);
};
