import { BadRequestException } from '@nestjs/common';
import { MAX_EDITS_PER_CALL, RPC_AGENT_TOOLS, changedFields, uneditableField, withEdits } from '@naalya/agent-tools';
import { withCode } from '../../core/http/error-code.js';
import { currentManager } from '../../core/tenancy/tenant-context.js';
import { canonicalHash } from '../tools/canonical-hash.js';
import { invalidArgumentsSentence } from '../tools/tool-error.js';
import type { StoredInterrupt } from './agent-run.entity.js';

/** A person's edit of a confirmation's arguments, as the resume request carries it, and where it was answered. */
export type ConfirmationEditRequest = {
  schoolId: string | null;
  threadId: string;
  runId: string;
  userId: string;
  /** The question as the server keeps it (a run's stored interrupt, or the MCP door's elicitation), never as the client sends it. */
  interrupt: Pick<StoredInterrupt, 'interruptId' | 'argsHash' | 'confirmation'>;
  edits: Record<string, unknown>;
};

const editRefused = (sentence: string) => withCode('EDIT_NOT_ALLOWED', new BadRequestException(sentence));

/**
 * Checks a person's edits of a confirmation and records them, in the caller's unit of work: only the arguments the
 * tool's definition lists as editable, merged over the arguments the question was asked about (which must hash to its
 * argsHash), parsed by the tool's own schema (a refusal reads as a call's would). A refusal throws a 400 and the
 * question stays pending. Returns the edited arguments the worker is resumed with; nothing is approved here: the
 * worker asks about the edited call again, and its approval links to this row. Changes are kept against the model's
 * own arguments (the first edit's original), so the audit shows what the person changed of what the assistant proposed.
 */
export const recordConfirmationEdit = async (request: ConfirmationEditRequest): Promise<Record<string, unknown>> => {
  const { interrupt, edits } = request;
  const confirmation = interrupt.confirmation;
  if (!confirmation) throw editRefused('Invalid request: edits: this question is not a confirmation, so it has nothing to edit.');
  const definition = RPC_AGENT_TOOLS.find((candidate) => candidate.event === confirmation.event);
  const editable = definition?.confirm?.editable;
  const field = uneditableField(editable, edits);
  if (!definition || field !== undefined) {
    const allowed = editable?.length ? `only ${editable.join(', ')} can be edited` : 'nothing in it can be edited';
    throw editRefused(`Invalid request: edits.${field ?? ''}: ${allowed} in this confirmation.`);
  }
  if (!confirmation.args || canonicalHash(confirmation.args) !== interrupt.argsHash) {
    throw editRefused('Invalid request: edits: this question does not carry the arguments it was asked about, so it cannot be edited.');
  }
  const [previous] = (await currentManager().query(
    `SELECT count(*)::int AS count, (array_agg(original_args ORDER BY created_at))[1] AS model_args
       FROM tool_call_edits WHERE thread_id = $1 AND call_id = $2`,
    [request.threadId, confirmation.callId],
  )) as { count: number; model_args: Record<string, unknown> | null }[];
  if ((previous?.count ?? 0) >= MAX_EDITS_PER_CALL) {
    throw editRefused(`Invalid request: edits: this call was edited ${MAX_EDITS_PER_CALL} times already; approve or decline it.`);
  }
  const parsed = definition.schema.safeParse(withEdits(confirmation.args, edits));
  if (!parsed.success) throw withCode('INVALID_ARGUMENTS', new BadRequestException(invalidArgumentsSentence(parsed.error.issues)));
  const edited = parsed.data as Record<string, unknown>;
  if (changedFields(confirmation.args, edited).length === 0) {
    throw editRefused('Invalid request: edits: they change nothing; approve or decline the question as it is.');
  }
  const modelArgs = previous?.model_args ?? confirmation.args;
  await currentManager().query(
    `INSERT INTO tool_call_edits (school_id, thread_id, run_id, interrupt_id, call_id, event, user_id,
                                  original_args_hash, original_args, edited_args_hash, edited_args, changes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      request.schoolId,
      request.threadId,
      request.runId,
      interrupt.interruptId,
      confirmation.callId,
      confirmation.event,
      request.userId,
      canonicalHash(modelArgs),
      JSON.stringify(modelArgs),
      canonicalHash(edited),
      JSON.stringify(edited),
      JSON.stringify(changedFields(modelArgs, edited)),
    ],
  );
  return edited;
};
