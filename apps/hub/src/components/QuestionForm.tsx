import { useId, useMemo, useRef, useState, type FormEvent } from 'react';
import { CONFIRMATION_ANSWERS, SPEAKER_HATS } from '@naalya/agent-tools';
import { editableFields, type ConfirmationEdits } from '../lib/confirmation-edits';
import { formatDateTime } from '../lib/dates';
import { expiryText, hasLapsed, type ChatItem } from '../lib/run-view';
import { useSchool } from '../lib/school-context';
import { speakerName } from '../lib/labels';
import { ConfirmationEditor, EditedSummary, canEdit } from './ConfirmationEdits';

type QuestionItem = Extract<ChatItem, { kind: 'question' }>;

/** Why a question takes no answer any more, in words. */
const CLOSED_TEXT: Partial<Record<QuestionItem['state'], string>> = {
  expired: 'This question can no longer be answered: its run ended or moved on without an answer.',
  stopped: 'This question can no longer be answered: the run was stopped.',
};

/**
 * A form bound to one question (its interrupt id): one answer, sent once. `focus`: the newest open question takes the
 * keyboard focus, so the answer can be typed at once. `now`: the clock its expiry is counted from. A confirmation whose
 * tool lets arguments be changed offers "Edit before approving"; one that ran out of time offers "Ask again".
 */
export const QuestionForm = ({
  item,
  focus = false,
  now = Date.now(),
  writtenIn,
  onAnswer,
  onAskAgain,
}: {
  item: QuestionItem;
  focus?: boolean;
  now?: number;
  /** A confirmation's school, for a platform administrator: where the write would be made. */
  writtenIn?: string;
  /** `edits`: the arguments the person changed, sent with a yes. */
  onAnswer: (interruptId: string, answer: string, edits?: ConfirmationEdits) => void;
  /** Sends the run's message again so the question is asked afresh; left out once that is under way. */
  onAskAgain?: (message: string) => void;
}) => {
  const { timeZone } = useSchool();
  const [answer, setAnswer] = useState('');
  const [editing, setEditing] = useState(false);
  const inputId = useId();
  const editorId = useId();
  const stateId = useId();
  const editButton = useRef<HTMLButtonElement | null>(null);
  const asker = speakerName(item.askedBy);
  const role = item.askedBy === 'rover' ? '' : ` (${SPEAKER_HATS[item.askedBy]})`;
  // Past its time by this page's clock: the server refuses an answer now, and is about to end the run.
  const lapsed = hasLapsed(item, now);
  const shownState = lapsed ? 'expired' : item.state;
  const open = shownState === 'pending';
  const fields = useMemo(() => (item.confirm && item.editable ? editableFields(item.event).filter(canEdit) : []), [item.confirm, item.editable, item.event]);
  const editorShown = editing && fields.length > 0 && (open || item.state === 'sending');
  const refused = item.noteField && fields.some((field) => field.name === item.noteField) && item.note ? { field: item.noteField, message: item.note } : undefined;
  const timedOut = shownState === 'expired' && (lapsed || item.askAgain !== undefined);

  const send = (value: string) => {
    if (!open || !value.trim()) return;
    onAnswer(item.id, value.trim());
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    send(answer);
  };
  const closeEditor = () => {
    setEditing(false);
    // The editor is gone: the keyboard goes back to the button that opened it.
    requestAnimationFrame(() => editButton.current?.focus());
  };

  return (
    <div
      role="group"
      className="rounded-lg border border-amber-300 bg-amber-50 p-3"
      aria-label={item.confirm ? `Confirmation asked by ${asker}` : `Question from ${asker}`}
      // Not read out as the conversation log grows: the assertive announcer says it once (ChatPage).
      aria-live="off"
      data-testid="question"
      data-state={shownState}
      data-interrupt-id={item.id}
    >
      <form onSubmit={submit}>
        <fieldset disabled={!open} className="space-y-2">
          <legend className="text-sm">
            <strong>
              {asker}
              {role}
            </strong>{' '}
            {item.confirm ? 'asks you to confirm:' : 'asks:'}
          </legend>
          <p className="font-medium">{item.question}</p>
          {item.edited?.length ? <EditedSummary event={item.event} edited={item.edited} /> : null}
          {writtenIn ? (
            <p className="text-sm text-slate-700" data-testid="written-in">
              In: <strong>{writtenIn}</strong>
            </p>
          ) : null}
          {item.confirm && open ? <p className="text-sm text-slate-700">Nothing is done unless you answer yes; any other answer cancels it.</p> : null}
          {open && item.expiresAt ? (
            <p className="text-sm text-slate-700" data-testid="question-expiry">
              This question{' '}
              <time dateTime={item.expiresAt}>
                {expiryText(item.expiresAt, now)}
              </time>{' '}
              ({formatDateTime(item.expiresAt, timeZone)}): unanswered by then, the run ends.
            </p>
          ) : null}
          {open ? (
            <>
              <label htmlFor={inputId} className="block text-sm">
                Your answer
              </label>
              <div className="flex flex-wrap gap-2">
                <input
                  id={inputId}
                  autoFocus={focus}
                  value={answer}
                  onChange={(event) => setAnswer(event.target.value)}
                  className="min-w-48 flex-1 rounded border border-slate-300 bg-white px-2 py-1"
                  maxLength={4000}
                />
                <button type="submit" className="rounded bg-amber-700 px-3 py-1 font-medium text-white hover:bg-amber-800">
                  Send answer
                </button>
                <button type="button" className="rounded border border-amber-700 px-3 py-1" onClick={() => send(CONFIRMATION_ANSWERS.approve)}>
                  Yes
                </button>
                <button type="button" className="rounded border border-amber-700 px-3 py-1" onClick={() => send(CONFIRMATION_ANSWERS.decline)}>
                  No
                </button>
                {fields.length > 0 ? (
                  <button
                    type="button"
                    ref={editButton}
                    aria-expanded={editorShown}
                    aria-controls={editorShown ? editorId : undefined}
                    className="rounded border border-amber-700 px-3 py-1"
                    onClick={() => (editorShown ? closeEditor() : setEditing(true))}
                  >
                    Edit before approving
                  </button>
                ) : null}
              </div>
            </>
          ) : null}
        </fieldset>
      </form>
      {editorShown ? (
        <div id={editorId}>
          <ConfirmationEditor
            event={item.event}
            fields={fields}
            current={item.editable ?? {}}
            refused={refused}
            busy={item.state === 'sending'}
            onApprove={(edits) => onAnswer(item.id, CONFIRMATION_ANSWERS.approve, edits)}
            onCancel={closeEditor}
          />
        </div>
      ) : null}
      {!open ? (
        <div className="mt-2 flex flex-wrap items-center gap-2">
          <p id={stateId} className="flex-1 text-sm text-slate-700" role="status" data-testid="question-state">
            {shownState === 'sending' && `Sending your answer${item.answer ? ` "${item.answer}"` : ''}…`}
            {shownState === 'answered' && `Answered${item.answer ? `: "${item.answer}"` : '.'}`}
            {timedOut
              ? `This question expired${item.expiresAt ? ` at ${formatDateTime(item.expiresAt, timeZone)}` : ''} without an answer, so nothing was done.`
              : CLOSED_TEXT[shownState]}
          </p>
          {timedOut && item.askAgain !== undefined && onAskAgain ? (
            <button
              type="button"
              aria-describedby={stateId}
              title={`Send "${item.askAgain}" again`}
              className="rounded bg-amber-700 px-3 py-1 font-medium text-white hover:bg-amber-800"
              onClick={() => onAskAgain(item.askAgain ?? '')}
              data-testid="ask-again"
            >
              Ask again
            </button>
          ) : null}
        </div>
      ) : null}
      {item.note && !refused ? <p className="mt-1 text-sm text-slate-600">{item.note}</p> : null}
    </div>
  );
};
