import { useId, useState, type FormEvent } from 'react';
import { SPEAKER_HATS } from '@naalya/agent-tools';
import { formatDateTime } from '../lib/dates';
import { expiryText, type ChatItem } from '../lib/run-view';
import { useSchool } from '../lib/school-context';
import { speakerName } from '../lib/labels';

type QuestionItem = Extract<ChatItem, { kind: 'question' }>;

/** Why a question takes no answer any more, in words. */
const CLOSED_TEXT: Partial<Record<QuestionItem['state'], string>> = {
  expired: 'This question can no longer be answered: its run ended or moved on without an answer.',
  stopped: 'This question can no longer be answered: the run was stopped.',
};

/**
 * A form bound to one question (its interrupt id): one answer, sent once. `focus`: the newest open question takes the
 * keyboard focus, so the answer can be typed at once. `now`: the clock its expiry is counted from.
 */
export const QuestionForm = ({
  item,
  focus = false,
  now = Date.now(),
  writtenIn,
  onAnswer,
}: {
  item: QuestionItem;
  focus?: boolean;
  now?: number;
  /** A confirmation's school, for a platform administrator: where the write would be made. */
  writtenIn?: string;
  onAnswer: (interruptId: string, answer: string) => void;
}) => {
  const { timeZone } = useSchool();
  const [answer, setAnswer] = useState('');
  const inputId = useId();
  const asker = speakerName(item.askedBy);
  const role = item.askedBy === 'rover' ? '' : ` (${SPEAKER_HATS[item.askedBy]})`;
  const open = item.state === 'pending';

  const send = (value: string) => {
    if (!open || !value.trim()) return;
    onAnswer(item.id, value.trim());
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    send(answer);
  };

  return (
    <form
      onSubmit={submit}
      className="rounded-lg border border-amber-300 bg-amber-50 p-3"
      aria-label={item.confirm ? `Confirmation asked by ${asker}` : `Question from ${asker}`}
      // Not read out as the conversation log grows: the assertive announcer says it once (ChatPage).
      aria-live="off"
      data-testid="question"
      data-state={item.state}
      data-interrupt-id={item.id}
    >
      <fieldset disabled={!open} className="space-y-2">
        <legend className="text-sm">
          <strong>
            {asker}
            {role}
          </strong>{' '}
          {item.confirm ? 'asks you to confirm:' : 'asks:'}
        </legend>
        <p className="font-medium">{item.question}</p>
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
            ({formatDateTime(item.expiresAt, timeZone)})
            {Date.parse(item.expiresAt) > now ? ': unanswered by then, the run ends.' : '.'}
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
              <button type="button" className="rounded border border-amber-700 px-3 py-1" onClick={() => send('yes')}>
                Yes
              </button>
              <button type="button" className="rounded border border-amber-700 px-3 py-1" onClick={() => send('no')}>
                No
              </button>
            </div>
          </>
        ) : (
          <p className="text-sm text-slate-700" role="status" data-testid="question-state">
            {item.state === 'sending' && `Sending your answer${item.answer ? ` "${item.answer}"` : ''}…`}
            {item.state === 'answered' && `Answered${item.answer ? `: "${item.answer}"` : '.'}`}
            {CLOSED_TEXT[item.state]}
          </p>
        )}
        {item.note ? <p className="text-sm text-slate-600">{item.note}</p> : null}
      </fieldset>
    </form>
  );
};
