import { isMutatingEvent } from '@naalya/agent-tools';
import type { ChatItem } from '../lib/run-view';
import { isSpecialist, speakerName, toolLabel } from '../lib/labels';
import { activityHref } from '../lib/route';
import { ResultView } from './ResultView';

type ToolItem = Extract<ChatItem, { kind: 'tool' }>;

const STATUS_STYLE: Record<ToolItem['status'], string> = {
  running: 'bg-sky-100 text-sky-900',
  done: 'bg-emerald-100 text-emerald-900',
  refused: 'bg-amber-100 text-amber-900',
  failed: 'bg-red-100 text-red-900',
  unknown: 'bg-violet-100 text-violet-900',
  stopped: 'bg-slate-200 text-slate-800',
};

/** The status in words; an unknown outcome says what the Hub is doing about it, and never claims either way. */
export const statusText = (item: ToolItem): string => {
  switch (item.status) {
    case 'running':
      return 'Running…';
    case 'done':
      return item.check === 'confirmed' ? 'Done (confirmed in the activity log)' : 'Done';
    case 'refused':
      return 'Refused';
    case 'failed':
      return 'Failed';
    case 'unknown':
      if (item.check === 'checking') return 'Outcome unknown, checking…';
      if (item.check === 'not-found') return 'Outcome unknown: no record of this change yet. Check before trying again.';
      return 'Outcome unknown: check before trying again.';
    case 'stopped':
      return 'Stopped: not done';
  }
};

const pretty = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/**
 * The arguments as they stand: the JSON text so far while they stream, laid out once complete; text that is not an
 * object is shown as it came.
 */
export const argsText = (item: ToolItem): string => {
  if (!item.argsComplete) return item.argsText;
  if (!item.args) return item.argsText;
  return Object.keys(item.args).length ? pretty(item.args) : '(none)';
};

/** `writtenIn`: the school a platform administrator's run acts in, named on each of its writes. */
export const ToolCard = ({ item, writtenIn }: { item: ToolItem; writtenIn?: string }) => {
  const label = toolLabel(item.name);
  const write = item.event !== undefined && isMutatingEvent(item.event);
  const auditId = item.result?.auditId;
  return (
    <article className="rounded-lg border border-slate-200 bg-white shadow-sm" aria-label={`Tool call: ${label}`} data-testid="tool-card" data-tool={item.name} data-status={item.status}>
      <details>
        <summary className="flex cursor-pointer flex-wrap items-center gap-2 px-3 py-2">
          <span className="font-medium">{label}</span>
          {isSpecialist(item.speaker) ? <span className="text-xs text-slate-500">by {speakerName(item.speaker)}</span> : null}
          <span className={`ml-auto rounded-full px-2 py-0.5 text-xs font-medium ${STATUS_STYLE[item.status]}`} data-testid="tool-status" role="status">
            {statusText(item)}
          </span>
        </summary>
        <div className="space-y-2 border-t border-slate-100 px-3 py-2 text-sm">
          <div>
            <h4 className="text-xs font-semibold uppercase text-slate-500">Arguments</h4>
            <pre
              className="overflow-auto rounded bg-slate-50 p-2 text-xs"
              data-testid="tool-args"
              data-complete={item.argsComplete}
              aria-busy={!item.argsComplete}
            >
              {argsText(item)}
              {item.argsComplete ? null : <span aria-hidden="true">▍</span>}
            </pre>
          </div>
          <p className="text-xs text-slate-500">
            <code>{item.event ?? 'local tool'}</code>
            {item.hopMs === undefined ? null : <> · hop {item.hopMs} ms</>}
          </p>
        </div>
      </details>
      {item.result ? (
        // The result is what the person asked for: laid out and shown, while the arguments stay folded above.
        <div className="border-t border-slate-100 px-3 py-2 text-sm" data-testid="tool-result">
          {item.result.error === undefined ? (
            <ResultView toolName={item.name} data={item.result.data} label={label} />
          ) : (
            <>
              <h4 className="text-xs font-semibold uppercase text-slate-500">Answer from the platform</h4>
              <p className="break-words">{item.result.error}</p>
            </>
          )}
        </div>
      ) : null}
      {item.result?.scopeContext ? (
        <p className="border-t border-slate-100 px-3 py-1.5 text-xs text-slate-600" data-testid="scope-line">
          <span className="font-semibold">Scope:</span> {item.result.scopeContext}
        </p>
      ) : null}
      {write && writtenIn ? (
        <p className="border-t border-slate-100 px-3 py-1.5 text-xs text-slate-700" data-testid="written-in">
          <span className="font-semibold">School:</span> {writtenIn}
        </p>
      ) : null}
      {auditId ? (
        <p className="border-t border-slate-100 px-3 py-1.5 text-xs">
          <a className="text-sky-800 underline" href={activityHref(auditId)}>
            View the audit row
          </a>
        </p>
      ) : null}
    </article>
  );
};
