import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import type { ConfirmationEdit } from '@naalya/agent-tools';
import { api } from '../lib/api';
import {
  changedArguments,
  draftOf,
  editSummaries,
  editableFields,
  fieldError,
  type ConfirmationEdits,
  type EditSummary,
  type EditableField,
} from '../lib/confirmation-edits';

type Choice = { id: string; name: string };

/**
 * How each kind of id is picked: by name, from a list the person may read (a person never types an id). A tool that
 * makes a new kind of id editable adds its list here.
 */
const ID_PICKERS: Record<string, () => Promise<Choice[]>> = {
  staff: async () =>
    (await api.staff())
      .filter((member) => member.isActive)
      .map((member) => ({ id: member.id, name: member.campusName ? `${member.fullName} (${member.campusName})` : member.fullName }))
      .sort((a, b) => a.name.localeCompare(b.name)),
};

/** Whether the Hub can offer the field: an id only with a picker of its kind. */
export const canEdit = (field: EditableField): boolean => field.kind !== 'id' || field.idKind in ID_PICKERS;

/** The names each id kind is picked from, loaded once per form; 'failed' if the list could not be read. */
const useIdChoices = (kinds: readonly string[]): Record<string, Choice[] | 'failed'> => {
  const [choices, setChoices] = useState<Record<string, Choice[] | 'failed'>>({});
  const key = [...new Set(kinds)].sort().join(' ');
  useEffect(() => {
    let live = true;
    for (const kind of key ? key.split(' ') : []) {
      ID_PICKERS[kind]?.().then(
        (list) => live && setChoices((known) => ({ ...known, [kind]: list })),
        () => live && setChoices((known) => ({ ...known, [kind]: 'failed' })),
      );
    }
    return () => {
      live = false;
    };
  }, [key]);
  return choices;
};

const nameIn = (list: Choice[] | 'failed' | undefined, id: string): string | undefined => (Array.isArray(list) ? list.find((choice) => choice.id === id)?.name : undefined);

/** Each change in words, an id by the name its picker lists (never the id itself). */
const useEditSummaries = (event: string | undefined, edited: readonly ConfirmationEdit[]): EditSummary[] => {
  const kinds = editableFields(event).flatMap((field) => (field.kind === 'id' && edited.some((edit) => edit.field === field.name) ? [field.idKind] : []));
  const choices = useIdChoices(kinds);
  return editSummaries(event, edited, (field, id) => (field.kind === 'id' ? nameIn(choices[field.idKind], id) : undefined));
};

/** "You changed: Comment from “…” to “…”": what the person changed, on the confirmation asked again after it. */
export const EditedSummary = ({ event, edited }: { event: string | undefined; edited: readonly ConfirmationEdit[] }) => {
  const summaries = useEditSummaries(event, edited);
  return (
    <p className="rounded border border-sky-300 bg-sky-50 px-2 py-1 text-sm text-sky-950" data-testid="question-edited">
      <strong>You changed:</strong>{' '}
      {summaries.map((summary, index) => (
        <span key={summary.field} data-testid="question-edit">
          {index > 0 ? '; ' : ''}
          {summary.label} from {summary.from} to {summary.to}
        </span>
      ))}
    </p>
  );
};

/** The changes a person made before approving, one a line: on an audit row's approval. */
export const EditList = ({ event, edits }: { event: string | undefined; edits: readonly ConfirmationEdit[] }) => {
  const summaries = useEditSummaries(event, edits);
  return (
    <ul className="ml-5 list-disc">
      {summaries.map((summary) => (
        <li key={summary.field}>
          {summary.label} from {summary.from} to {summary.to}
        </li>
      ))}
    </ul>
  );
};

const hintOf = (field: EditableField): string => {
  const parts = [field.optional ? 'Optional.' : 'Required.'];
  if (field.kind === 'text' && field.maxLength !== undefined) parts.push(`Up to ${field.maxLength} characters.`);
  if (field.kind === 'id') parts.push('Pick by name.');
  return parts.join(' ');
};

type EditorProps = {
  /** The confirmation's tool event: its schema checks the values before they are sent. */
  event: string | undefined;
  fields: readonly EditableField[];
  /** The values asked about, which the fields start from. */
  current: Record<string, unknown>;
  /** The server's refusal of a changed field (a 400 naming it): said beside it, the values kept. */
  refused?: { field: string; message: string };
  /** While the answer is on its way: nothing can change. */
  busy: boolean;
  onApprove: (edits: ConfirmationEdits) => void;
  onCancel: () => void;
};

/**
 * The editable arguments of a confirmation, prefilled with the values asked about, labelled for people. Each field's
 * hint and error are tied to it (aria-describedby), the first field takes the focus as the editor opens, and a field
 * that is refused (here or by the server) takes it back.
 */
export const ConfirmationEditor = ({ event, fields, current, refused, busy, onApprove, onCancel }: EditorProps) => {
  const [drafts, setDrafts] = useState<Record<string, string>>(() => Object.fromEntries(fields.map((field) => [field.name, draftOf(current[field.name])])));
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [formError, setFormError] = useState<string | null>(null);
  const baseId = useId();
  const controls = useRef(new Map<string, HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>());
  const choices = useIdChoices(fields.flatMap((field) => (field.kind === 'id' ? [field.idKind] : [])));
  const focusField = (name: string | undefined) => (name === undefined ? undefined : controls.current.get(name)?.focus());

  // Once, as the editor opens.
  useEffect(() => focusField(fields[0]?.name), []);
  const refusedField = refused?.field;
  const refusedMessage = refused?.message;
  useEffect(() => {
    if (refusedField === undefined || refusedMessage === undefined) return;
    setErrors((shown) => ({ ...shown, [refusedField]: refusedMessage }));
    focusField(refusedField);
  }, [refusedField, refusedMessage]);

  const submit = (formEvent: FormEvent) => {
    formEvent.preventDefault();
    if (busy) return;
    const found = Object.fromEntries(
      fields.flatMap((field) => {
        const error = fieldError(event, field, drafts[field.name] ?? '');
        return error ? [[field.name, error]] : [];
      }),
    );
    setErrors(found);
    const invalid = fields.find((field) => found[field.name]);
    if (invalid) {
      setFormError(null);
      focusField(invalid.name);
      return;
    }
    const edits = changedArguments(fields, current, drafts);
    if (Object.keys(edits).length === 0) {
      setFormError('Nothing has been changed yet: change a field, or approve it as asked with Yes.');
      focusField(fields[0]?.name);
      return;
    }
    setFormError(null);
    onApprove(edits);
  };

  const change = (name: string, value: string) => {
    setDrafts((known) => ({ ...known, [name]: value }));
    // A changed value is judged again when it is sent.
    setErrors((shown) => Object.fromEntries(Object.entries(shown).filter(([key]) => key !== name)));
    setFormError(null);
  };

  const headingId = `${baseId}-heading`;
  const formErrorId = `${baseId}-form-error`;
  return (
    <form
      onSubmit={submit}
      // Escape leaves the editor as Cancel does: the question stays as asked.
      onKeyDown={(keyEvent) => {
        if (keyEvent.key === 'Escape' && !busy) onCancel();
      }}
      aria-labelledby={headingId}
      className="mt-2 space-y-3 rounded border border-amber-400 bg-white p-3"
      data-testid="confirmation-editor"
      noValidate
    >
      <p id={headingId} className="text-sm font-semibold">
        Change before approving
      </p>
      <fieldset disabled={busy} className="space-y-3">
        <legend className="sr-only">The details you may change</legend>
        {fields.map((field) => {
          const id = `${baseId}-${field.name}`;
          const hintId = `${id}-hint`;
          const errorId = `${id}-error`;
          const error = errors[field.name];
          const common = {
            id,
            name: field.name,
            value: drafts[field.name] ?? '',
            'aria-describedby': error ? `${errorId} ${hintId}` : hintId,
            'aria-invalid': error ? true : undefined,
            ref: (element: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement | null) => {
              if (element) controls.current.set(field.name, element);
              else controls.current.delete(field.name);
            },
            className: 'w-full min-w-0 rounded border border-slate-400 bg-white px-2 py-1 aria-invalid:border-red-700',
          };
          const list = field.kind === 'id' ? choices[field.idKind] : undefined;
          return (
            <div key={field.name} data-testid="edit-field" data-field={field.name}>
              <label htmlFor={id} className="block text-sm font-medium">
                {field.label}
              </label>
              {field.kind === 'text' ? (
                field.multiline ? (
                  <textarea {...common} rows={3} maxLength={field.maxLength} onChange={(changeEvent) => change(field.name, changeEvent.target.value)} />
                ) : (
                  <input {...common} maxLength={field.maxLength} onChange={(changeEvent) => change(field.name, changeEvent.target.value)} />
                )
              ) : field.kind === 'choice' ? (
                <select {...common} onChange={(changeEvent) => change(field.name, changeEvent.target.value)}>
                  {field.optional ? <option value="">None</option> : null}
                  {field.choices.map((choice) => (
                    <option key={choice} value={choice}>
                      {choice}
                    </option>
                  ))}
                </select>
              ) : (
                // Focusable while the names load (the editor's first field takes the focus as it opens); a list that
                // could not be read leaves the value as asked.
                <select {...common} disabled={list === 'failed'} onChange={(changeEvent) => change(field.name, changeEvent.target.value)}>
                  {!Array.isArray(list) ? <option value={drafts[field.name] ?? ''}>{list === 'failed' ? 'The names could not be loaded' : 'Loading names…'}</option> : null}
                  {Array.isArray(list) && !list.some((choice) => choice.id === drafts[field.name]) ? (
                    <option value={drafts[field.name] ?? ''}>{drafts[field.name] ? 'As asked' : `Choose a ${field.label.toLowerCase()}`}</option>
                  ) : null}
                  {Array.isArray(list)
                    ? list.map((choice) => (
                        <option key={choice.id} value={choice.id}>
                          {choice.name}
                        </option>
                      ))
                    : null}
                </select>
              )}
              <p id={hintId} className="text-xs text-slate-700">
                {list === 'failed' ? 'The list of names could not be loaded, so this stays as asked.' : hintOf(field)}
              </p>
              {error ? (
                <p id={errorId} className="text-sm font-medium text-red-800" data-testid="edit-error">
                  {error}
                </p>
              ) : null}
            </div>
          );
        })}
        {formError ? (
          <p id={formErrorId} role="alert" className="text-sm font-medium text-red-800">
            {formError}
          </p>
        ) : null}
        <div className="flex flex-wrap gap-2">
          <button type="submit" className="rounded bg-amber-700 px-3 py-1 font-medium text-white hover:bg-amber-800">
            Approve with changes
          </button>
          <button type="button" className="rounded border border-slate-400 px-3 py-1" onClick={onCancel}>
            Cancel changes
          </button>
        </div>
      </fieldset>
    </form>
  );
};
