import { useId, useState } from 'react';

/** Raw JSON one keyboard toggle away (aria-expanded, aria-controls): for whoever needs the exact data behind a view. */
export const JsonToggle = ({ data }: { data: unknown }) => {
  const [shown, setShown] = useState(false);
  const jsonId = useId();
  return (
    <>
      <button
        type="button"
        className="rounded border border-slate-300 px-2 py-0.5 text-xs text-slate-700 hover:bg-slate-50"
        aria-expanded={shown}
        aria-controls={jsonId}
        onClick={() => setShown((open) => !open)}
        data-testid="json-toggle"
      >
        {shown ? 'Hide JSON' : 'Show JSON'}
      </button>
      <pre id={jsonId} hidden={!shown} className="max-h-72 overflow-auto rounded bg-slate-50 p-2 text-xs whitespace-pre-wrap break-all" data-testid="result-json">
        {JSON.stringify(data, null, 2)}
      </pre>
    </>
  );
};
