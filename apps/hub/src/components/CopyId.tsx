import { useEffect, useState } from 'react';

/** How long "Copied" stays beside the button before it reads "Copy id" again. */
const CONFIRMATION_MS = 2_000;

/**
 * One click (or Enter/Space) puts a thing's id on the clipboard. Its accessible name says whose id it is ("Copy id of
 * Languages"); the outcome is announced politely beside it, and a refused copy shows the id to select instead.
 */
export const CopyId = ({ id, name, what = 'id' }: { id: string; name: string; what?: string }) => {
  const [outcome, setOutcome] = useState<'copied' | 'failed' | null>(null);
  useEffect(() => {
    if (!outcome) return undefined;
    const timer = setTimeout(() => setOutcome(null), CONFIRMATION_MS);
    return () => clearTimeout(timer);
  }, [outcome]);
  const copy = () =>
    navigator.clipboard.writeText(id).then(
      () => setOutcome('copied'),
      () => setOutcome('failed'),
    );
  return (
    <span className="inline-flex flex-wrap items-center gap-1 text-xs">
      <button
        type="button"
        onClick={() => void copy()}
        aria-label={`Copy ${what} of ${name}`}
        title={id}
        className="rounded border border-slate-300 px-1.5 py-0.5 text-slate-700 hover:bg-slate-100"
        data-testid="copy-id"
      >
        Copy {what}
      </button>
      <span role="status" className={outcome === 'failed' ? 'text-red-800' : 'text-emerald-800'}>
        {outcome === 'copied' ? 'Copied' : outcome === 'failed' ? 'Could not copy; select it:' : ''}
      </span>
      {/* Where the clipboard is refused, the id itself, selectable, wherever the button is (a result, an activity row). */}
      {outcome === 'failed' ? <code className="break-all select-all">{id}</code> : null}
    </span>
  );
};
