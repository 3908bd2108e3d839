import { z } from 'zod';
import { canonicalJson } from './canonical-json.js';
import type { AgentToolResult, UserEdited } from './agent-tool-envelope.js';

/** What the Hub's buttons send to answer a confirmation. */
export const CONFIRMATION_ANSWERS = { approve: 'yes', decline: 'no' } as const;

// A closed list, not a guess at intent: anything else (including "yes, but ...") declines, so an ambiguous answer
// never approves a change.
const APPROVING_ANSWERS: ReadonlySet<string> = new Set(['yes', 'y', 'approve', 'approved', 'confirm', 'confirmed', 'ok', 'okay', 'go ahead', 'yes go ahead']);

/**
 * True when an answer to a confirmation approves it. The worker's proxy (run it or not) and the server's resume
 * (record an approval or not) both decide with this one function, so they cannot disagree about an answer.
 */
export const isApprovalAnswer = (answer: string): boolean =>
  APPROVING_ANSWERS.has(
    answer
      .trim()
      .toLowerCase()
      .replace(/[.!,]/g, '')
      .replace(/\s+/g, ' '),
  );

/** The most times a person may edit one call's arguments before they approve or decline it (each edit asks again). */
export const MAX_EDITS_PER_CALL = 5;

/** One argument a person changed before approving: its value before and after (null: not set, so both always travel). */
export const confirmationEditSchema = z.strictObject({ field: z.string().min(1).max(100), from: z.unknown(), to: z.unknown() });
export type ConfirmationEdit = z.infer<typeof confirmationEditSchema>;

const id = z.string().min(1).max(100);
const argsRecord = z.record(z.string().max(100), z.unknown());

/**
 * What a confirmation is about: the RabbitMQ event and idempotency call id of the call it approves, and the call's
 * arguments. An approving answer is recorded by the server against these, the question's argsHash, the thread and the
 * user; nothing else approves.
 */
export const confirmationSchema = z.strictObject({
  event: z.string().min(1).max(100),
  callId: id,
  /**
   * The confirmed call's arguments as its tool's schema parsed them. An edit is merged over them by the server, which
   * first checks that they hash to the question's argsHash (they are the arguments the question was asked about).
   */
  args: argsRecord.optional(),
  /** On a tool whose definition lists editable arguments: their current values (an absent key is not set). */
  editable: argsRecord.optional(),
  /** Set when this question is asked again after a person's edit: what they changed from the model's arguments. */
  edited: z.array(confirmationEditSchema).max(50).optional(),
});
export type Confirmation = z.infer<typeof confirmationSchema>;

/**
 * How the server resumes the worker when a person edited a confirmation's arguments instead of answering it: the whole
 * edited arguments, parsed by the tool's schema. The worker parses them again, has the server render the new question
 * and asks it; nothing runs before that question is approved.
 */
export const confirmationEditAnswerSchema = z.strictObject({ editedArgs: argsRecord });
export type ConfirmationEditAnswer = z.infer<typeof confirmationEditAnswerSchema>;

/** A question's answer as the worker receives it: the text, or an edit of a confirmation's arguments. */
export const runAnswerSchema = z.union([z.string().max(4_000), confirmationEditAnswerSchema]);
export type RunAnswer = z.infer<typeof runAnswerSchema>;

/** The answer is an edit of the confirmation's arguments (not an approval: the edited call is asked about again). */
export const isConfirmationEdit = (answer: unknown): answer is ConfirmationEditAnswer => confirmationEditAnswerSchema.safeParse(answer).success;

/** The editable arguments' current values, as a confirmation carries them; undefined for a tool with none. */
export const editableValues = (editable: readonly string[] | undefined, args: Record<string, unknown>): Record<string, unknown> | undefined =>
  editable?.length ? Object.fromEntries(editable.filter((field) => args[field] !== undefined).map((field) => [field, args[field]])) : undefined;

/** The first edited field the tool does not list as editable, or undefined when every one is. */
export const uneditableField = (editable: readonly string[] | undefined, edits: Record<string, unknown>): string | undefined =>
  Object.keys(edits).find((field) => !(editable ?? []).includes(field));

/** The arguments with a person's edits over them; an edit to null unsets the argument. */
export const withEdits = (args: Record<string, unknown>, edits: Record<string, unknown>): Record<string, unknown> => {
  const merged: Record<string, unknown> = { ...args };
  for (const [field, value] of Object.entries(edits)) {
    if (value === null) delete merged[field];
    else merged[field] = value;
  }
  return merged;
};

/** The arguments that differ between two sets of arguments, in key order, compared by their canonical JSON; null: not set. */
export const changedFields = (from: Record<string, unknown>, to: Record<string, unknown>): ConfirmationEdit[] =>
  [...new Set([...Object.keys(from), ...Object.keys(to)])]
    .sort()
    .filter((field) => canonicalJson(from[field]) !== canonicalJson(to[field]))
    .map((field) => ({ field, from: from[field] ?? null, to: to[field] ?? null }));

/**
 * A confirmed call's result as the caller is told it: when the person edited the call before approving, which
 * arguments they changed and the values that ran (the worker's proxy and the MCP door both say it).
 */
export const withUserEdits = (result: AgentToolResult, model: Record<string, unknown>, ran: Record<string, unknown>): AgentToolResult => {
  const fields = changedFields(model, ran).map((edit) => edit.field);
  if ('error' in result || fields.length === 0) return result;
  const userEdited: UserEdited = {
    note: `The user changed ${fields.join(', ')} before approving; this ran with their values, not yours.`,
    fields,
    ran: Object.fromEntries(fields.map((field) => [field, ran[field] ?? null])),
  };
  return { ...result, userEdited };
};
