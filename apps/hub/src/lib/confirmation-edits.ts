import { RPC_AGENT_TOOLS, type AnyAgentTool, type ConfirmationEdit } from '@naalya/agent-tools';
import { fieldLabel } from './result-view';

/**
 * The arguments a person may change before approving a confirmation, drawn from the tool's own definition: its
 * `confirm.editable` names them and its schema says what each takes, so a new editable tool needs no Hub code (an id
 * argument needs a picker of its kind, in ConfirmationEdits.tsx: a person never types an id). Pure: the form draws it.
 */

/** The part of a JSON Schema property the form reads. */
type JsonProperty = { type?: string; format?: string; maxLength?: number; minLength?: number; enum?: unknown[]; description?: string };
type JsonObject = { properties?: Record<string, JsonProperty>; required?: string[] };

type Common = { name: string; label: string; optional: boolean };
export type EditableField =
  | (Common & { kind: 'text'; maxLength?: number; minLength?: number; multiline: boolean })
  | (Common & { kind: 'choice'; choices: string[] })
  /** An id, picked from a list of names: `idKind` is what it identifies ("staff" for staffId). */
  | (Common & { kind: 'id'; idKind: string });

const TOOLS: ReadonlyMap<string, AnyAgentTool> = new Map(RPC_AGENT_TOOLS.map((tool) => [tool.event, tool]));
const schemas = new Map<string, JsonObject>();

/** The tool's input as JSON Schema, computed once per tool. */
const jsonSchemaOf = (tool: AnyAgentTool): JsonObject => {
  const known = schemas.get(tool.event);
  if (known) return known;
  const json = tool.schema.toJSONSchema({ io: 'input' }) as JsonObject;
  schemas.set(tool.event, json);
  return json;
};

/** Longer text than this gets a multi-line box. */
const MULTILINE_FROM = 120;

/** "The id of the teacher, as list_staff returns it." → "Teacher": what the id stands for, in the schema's words. */
const idLabel = (description: string | undefined, idKind: string): string => {
  const named = description?.match(/^the id of (?:the |a |an )?([^,.(]+)/i)?.[1]?.trim();
  return named ? named.charAt(0).toUpperCase() + named.slice(1) : fieldLabel(idKind);
};

const fieldOf = (name: string, property: JsonProperty, optional: boolean): EditableField | undefined => {
  if (property.format === 'uuid' && /Id$/.test(name)) {
    const idKind = name.slice(0, -2);
    return { name, label: idLabel(property.description, idKind), optional, kind: 'id', idKind };
  }
  if (Array.isArray(property.enum) && property.enum.every((choice) => typeof choice === 'string')) {
    return { name, label: fieldLabel(name), optional, kind: 'choice', choices: property.enum as string[] };
  }
  if (property.type === 'string' && property.format === undefined) {
    return {
      name,
      label: fieldLabel(name),
      optional,
      kind: 'text',
      multiline: (property.maxLength ?? Infinity) > MULTILINE_FROM,
      ...(property.maxLength === undefined ? {} : { maxLength: property.maxLength }),
      ...(property.minLength === undefined ? {} : { minLength: property.minLength }),
    };
  }
  // Dates, numbers and the like have no field here yet: they stay as asked.
  return undefined;
};

/** The fields a confirmation of `event` offers to change, in the order the tool's definition lists them. */
export const editableFields = (event: string | undefined): EditableField[] => {
  const tool = event ? TOOLS.get(event) : undefined;
  const names: readonly string[] = tool?.confirm?.editable ?? [];
  if (!tool || names.length === 0) return [];
  const json = jsonSchemaOf(tool);
  return names.flatMap((name) => {
    const property = json.properties?.[name];
    const field = property ? fieldOf(name, property, !(json.required ?? []).includes(name)) : undefined;
    return field ? [field] : [];
  });
};

/** A field's current value as the form holds it: text, with nothing as the empty string. */
export const draftOf = (value: unknown): string => (typeof value === 'string' ? value : value === undefined || value === null ? '' : String(value));

/** What the form's text stands for as an argument: text is trimmed (as the schema trims it). */
const argumentOf = (field: EditableField, text: string): string => (field.kind === 'text' ? text.trim() : text);

/**
 * Why the value cannot be sent, in words tied to the field, or undefined when it can: checked with the tool's own
 * schema, so the form refuses what the server would.
 */
export const fieldError = (event: string | undefined, field: EditableField, text: string): string | undefined => {
  const value = argumentOf(field, text);
  if (value === '' && !field.optional) return field.kind === 'id' || field.kind === 'choice' ? `Choose a ${field.label.toLowerCase()}.` : `${field.label} is required.`;
  if (field.kind === 'text' && field.maxLength !== undefined && value.length > field.maxLength) {
    return `${field.label} takes at most ${field.maxLength} characters (this has ${value.length}).`;
  }
  if (field.kind === 'text' && field.minLength !== undefined && value.length < field.minLength && !(field.optional && value === '')) {
    return `${field.label} needs at least ${field.minLength} characters.`;
  }
  const schema = event ? TOOLS.get(event)?.schema.shape[field.name] : undefined;
  if (schema && !schema.safeParse(value).success) return `This ${field.label.toLowerCase()} is not accepted.`;
  return undefined;
};

/** The resume's `edits`: each changed argument's new value; null unsets an optional one. */
export type ConfirmationEdits = Record<string, string | null>;

/** The arguments the person changed (by the form's text against the values asked about), as the resume sends them. */
export const changedArguments = (fields: readonly EditableField[], current: Record<string, unknown>, drafts: Record<string, string>): ConfirmationEdits =>
  Object.fromEntries(
    fields.flatMap((field) => {
      const draft = drafts[field.name];
      if (draft === undefined) return [];
      const value = argumentOf(field, draft);
      if (value === argumentOf(field, draftOf(current[field.name]))) return [];
      return [[field.name, value === '' && field.optional ? null : value]];
    }),
  );

/**
 * Which changed argument the server's refusal is about: its sentence names it as a path ("comment: Too big…",
 * "edits.comment: …"), so the form can say why beside that field.
 */
export const refusedField = (message: string, names: readonly string[]): string | undefined =>
  names.find((name) => new RegExp(`(^|[\\s.;])${name.replace(/[^\w]/g, '')}:`).test(message));

/** "Comment", from "" to "Add the homework": one change as a person reads it; an id is named by `nameOf`. */
export type EditSummary = { field: string; label: string; from: string; to: string };

const NOTHING = 'nothing';

/**
 * What the person changed, as the re-asked confirmation reports it: each change labelled and with its values in words
 * (an id by the name `nameOf` gives it, never the id itself).
 */
export const editSummaries = (
  event: string | undefined,
  edited: readonly ConfirmationEdit[],
  nameOf: (field: EditableField, id: string) => string | undefined,
): EditSummary[] => {
  const fields = new Map(editableFields(event).map((field) => [field.name, field]));
  const text = (name: string, value: unknown): string => {
    const draft = draftOf(value).trim();
    if (!draft) return NOTHING;
    const field = fields.get(name);
    if (field?.kind === 'id') return nameOf(field, draft) ?? `another ${field.label.toLowerCase()}`;
    // An id argument the Hub has no field for is still never shown as an id.
    if (!field && /Id$/.test(name)) return `another ${fieldLabel(name.slice(0, -2)).toLowerCase()}`;
    return `“${draft}”`;
  };
  return edited.map((edit) => {
    const label = fields.get(edit.field)?.label ?? fieldLabel(edit.field.replace(/Id$/, ''));
    return { field: edit.field, label, from: text(edit.field, edit.from), to: text(edit.field, edit.to) };
  });
};
