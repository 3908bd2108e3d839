import { useEffect, useRef, useState, type ReactNode } from 'react';
import type { AuditLogDetail } from '@naalya/access';
import { sourceLabel, type ActivityFilters } from '../lib/activity-filters';
import { api } from '../lib/api';
import { formatDateTime } from '../lib/dates';
import { auditActionLabel, toolEvent } from '../lib/labels';
import { cellText, fieldLabel } from '../lib/result-view';
import { activityListHref, chatHref } from '../lib/route';
import { HttpError } from '../lib/sse';
import { EditList } from './ConfirmationEdits';
import { CopyId } from './CopyId';
import { JsonToggle } from './JsonToggle';

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A value of the changes summary as a person reads it: nested records as nested lists, a list item by item. */
const ChangeValue = ({ value }: { value: unknown }): ReactNode => {
  if (isRecord(value)) return <ChangeList changes={value} />;
  if (Array.isArray(value) && value.some((item) => isRecord(item) || Array.isArray(item))) {
    return (
      <ol className="list-decimal space-y-1 pl-5">
        {value.map((item, index) => (
          <li key={index}>
            <ChangeValue value={item} />
          </li>
        ))}
      </ol>
    );
  }
  return <span className="break-words">{Array.isArray(value) ? value.map((item) => cellText(item)).join(', ') || 'None' : cellText(value)}</span>;
};

const ChangeList = ({ changes }: { changes: Record<string, unknown> }) => (
  <dl className="grid grid-cols-1 gap-x-3 gap-y-0.5 sm:grid-cols-[max-content_minmax(0,1fr)]">
    {Object.entries(changes).map(([key, value]) => (
      <div key={key} className="contents">
        <dt className="text-slate-700">{fieldLabel(key)}</dt>
        <dd className="min-w-0 max-sm:mb-1">
          <ChangeValue value={value} />
        </dd>
      </div>
    ))}
  </dl>
);

const Fact = ({ term, children }: { term: string; children: ReactNode }) => (
  <div className="contents">
    <dt className="font-medium text-slate-700">{term}</dt>
    <dd className="min-w-0 break-words max-sm:mb-2">{children}</dd>
  </div>
);

type Props = { id: string; filters: ActivityFilters; timeZone?: string; onApiError: (error: unknown) => void };

/** One activity row in full, at its own URL: what changed, who, when, where from, and the trail to follow it by. */
export const ActivityDetail = ({ id, filters, timeZone, onApiError }: Props) => {
  const [row, setRow] = useState<AuditLogDetail | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const heading = useRef<HTMLHeadingElement | null>(null);

  useEffect(() => {
    let live = true;
    setRow(null);
    setRefusal(null);
    api.auditRow(id).then(
      (detail) => live && setRow(detail),
      (error: unknown) => {
        if (!live) return;
        if (error instanceof HttpError && [400, 403, 404].includes(error.status)) setRefusal(error.message);
        else onApiError(error);
      },
    );
    return () => {
      live = false;
    };
  }, [id, onApiError]);

  // Opening a row moves focus to its heading, so a screen reader starts reading the detail where it begins.
  useEffect(() => {
    if (row || refusal) heading.current?.focus();
  }, [row, refusal]);

  const what = row ? auditActionLabel(row) : null;
  return (
    <section aria-labelledby="activity-detail-title" className="rounded-lg bg-white p-4 shadow-sm" data-testid="audit-detail">
      <a href={activityListHref(filters)} className="text-sm text-sky-800 underline" data-testid="back-to-list">
        Back to the list
      </a>
      <h2 id="activity-detail-title" ref={heading} tabIndex={-1} className="mt-2 mb-3 text-lg font-semibold">
        {what ? `${what.label}${row?.resourceName ? `: ${row.resourceName}` : ''}` : refusal ? 'This activity row cannot be shown' : 'Loading the activity row…'}
      </h2>
      {refusal ? (
        <p role="alert" className="rounded border border-amber-300 bg-amber-50 px-3 py-2 text-amber-900">
          {refusal}
        </p>
      ) : null}
      {row && what ? (
        <>
          <dl className="grid grid-cols-1 gap-x-4 gap-y-1 text-sm sm:grid-cols-[max-content_minmax(0,1fr)]">
            <Fact term="When">
              <time dateTime={row.createdAt}>{formatDateTime(row.createdAt, timeZone)}</time>
            </Fact>
            <Fact term="Who">{row.actorName ?? (row.actorType === 'platform_admin' ? 'Platform administrator' : 'A person no longer on record')}</Fact>
            <Fact term="Source">{sourceLabel(row.source)}</Fact>
            <Fact term={row.tool ? 'Tool' : 'Route'}>
              {what.label} {what.detail ? <code className="text-xs text-slate-700">({what.detail})</code> : null}
            </Fact>
            <Fact term="Resource">
              {row.resourceName ?? fieldLabel(row.resourceType)} <span className="text-slate-700">({fieldLabel(row.resourceType).toLowerCase()})</span>{' '}
              {row.resourceId ? <CopyId id={row.resourceId} name={row.resourceName ?? row.resourceType} /> : null}
            </Fact>
            {row.runId ? (
              <Fact term="Run">
                <code className="text-xs break-all">{row.runId}</code>{' '}
                {row.threadId ? (
                  <a href={chatHref(row.threadId)} className="text-sky-800 underline" data-testid="thread-link">
                    Open the conversation
                  </a>
                ) : null}
              </Fact>
            ) : null}
            {row.callId ? (
              <Fact term="Tool call">
                <code className="text-xs break-all">{row.callId}</code>
              </Fact>
            ) : null}
            {row.traceId ? (
              <Fact term="Trace">
                <code className="text-xs break-all" data-testid="trace-id">
                  {row.traceId}
                </code>
              </Fact>
            ) : null}
            {row.tokenUsage ? (
              <Fact term="Tokens used by the run">
                {`${row.tokenUsage.input.toLocaleString()} in, ${row.tokenUsage.output.toLocaleString()} out`}
              </Fact>
            ) : null}
            <Fact term="Activity row">
              <CopyId id={row.id} name="this activity row" />
            </Fact>
          </dl>
          {row.approval ? (
            <>
              <h3 className="mt-4 mb-1 font-semibold">Approval</h3>
              <dl className="grid grid-cols-1 gap-x-4 gap-y-1 text-sm sm:grid-cols-[max-content_minmax(0,1fr)]" data-testid="audit-approval">
                <Fact term="Approved by">{row.approval.approvedByName ?? 'A person no longer on record'}</Fact>
                <Fact term="Approved">
                  <time dateTime={row.approval.approvedAt}>{formatDateTime(row.approval.approvedAt, timeZone)}</time>
                </Fact>
                <Fact term="Their answer">“{row.approval.answer}”</Fact>
                <Fact term="Changed before approving">
                  {row.approval.edited ? (
                    <div data-testid="approval-edited">
                      <p>Yes: what ran is what they approved, not what the assistant proposed.</p>
                      <EditList event={toolEvent(row.tool)} edits={row.approval.edits} />
                    </div>
                  ) : (
                    'No: it ran as the assistant proposed it.'
                  )}
                </Fact>
              </dl>
            </>
          ) : null}
          <h3 className="mt-4 mb-1 font-semibold">What changed</h3>
          <div className="space-y-2 text-sm" data-testid="audit-changes">
            {row.changes && Object.keys(row.changes).length ? <ChangeList changes={row.changes} /> : <p>No details of the change were recorded.</p>}
            {row.changes ? <JsonToggle data={row.changes} /> : null}
          </div>
        </>
      ) : null}
    </section>
  );
};
