import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { AuditSource, type AuditLogRow } from '@naalya/access';
import { exportFileName, filtersFromQuery, filtersToApiQuery, filtersToQuery, sourceLabel, type ActivityFilters } from '../lib/activity-filters';
import { api, type StaffMember } from '../lib/api';
import { formatDateTime, timeZoneLabel } from '../lib/dates';
import { auditActionLabel } from '../lib/labels';
import { fieldLabel } from '../lib/result-view';
import { useSchool } from '../lib/school-context';
import { activityDetailHref, activityListHref } from '../lib/route';
import { HttpError } from '../lib/sse';
import { ActivityDetail } from './ActivityDetail';
import { ActivityFiltersForm } from './ActivityFiltersForm';
import { CopyId } from './CopyId';

/** Rows per page: a screen or two; "Load more" follows the API's cursor for the rest. */
export const ACTIVITY_PAGE_SIZE = 50;

type Props = {
  highlight: string | null;
  detailId: string | null;
  filters: ActivityFilters;
  schoolName: string | null;
  /** The school's IANA time zone once the Hub knows it; undefined is the browser's. Dates and the range use it. */
  timeZone?: string;
  onApiError: (error: unknown) => void;
};

type List = { rows: AuditLogRow[]; next: string | null; loading: boolean; refusal: string | null };

/** A refusal the person can act on is shown as the server's sentence; anything else goes to the page's error. */
const refusalOf = (error: unknown): string | null => (error instanceof HttpError && (error.status === 403 || error.status === 400) ? error.message : null);

const whoOf = (row: AuditLogRow) => row.actorName ?? (row.actorType === 'platform_admin' ? 'Platform administrator' : 'A person no longer on record');

const SourceBadge = ({ source }: { source: string }) =>
  source === AuditSource.AGENT ? (
    <span className="rounded-full bg-violet-200 px-2 py-0.5 text-xs font-medium text-violet-900" data-testid="agent-badge">
      {sourceLabel(source)}
    </span>
  ) : (
    <span className="rounded-full bg-slate-200 px-2 py-0.5 text-xs font-medium text-slate-800">{sourceLabel(source)}</span>
  );

/** Saves a blob under a file name, as a download the browser asks nothing about. */
const download = (blob: Blob, fileName: string) => {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
};

/**
 * The school's activity log, newest first, filtered by what the URL says; one row's detail at its own URL over the
 * list, which keeps its pages meanwhile so closing the detail returns to the same place.
 */
export const ActivityPage = ({ highlight, detailId, filters, schoolName, timeZone: zoneGiven, onApiError }: Props) => {
  // The school's zone from the Hub's school context unless one is given; a platform administrator's picked school names the page.
  const { acting, timeZone: schoolZone } = useSchool();
  const timeZone = zoneGiven ?? schoolZone ?? undefined;
  const filterKey = filtersToQuery(filters).toString();
  // The filters stand for their URL: a new object for the same query is the same view, and fetches nothing again.
  const applied = useMemo(() => filtersFromQuery(new URLSearchParams(filterKey)), [filterKey]);
  const apiQuery = useMemo(() => filtersToApiQuery(applied, timeZone), [applied, timeZone]);
  const [list, setList] = useState<List>({ rows: [], next: null, loading: true, refusal: null });
  const [staff, setStaff] = useState<StaffMember[] | string | null>(null);
  const [announcement, setAnnouncement] = useState('');
  const [exportState, setExportState] = useState<{ busy: boolean; message: string | null }>({ busy: false, message: null });
  const focusRowId = useRef<string | null>(null);
  const lastOpened = useRef<string | null>(null);
  const table = useRef<HTMLTableElement | null>(null);

  useEffect(() => {
    let live = true;
    api.staff().then(
      (members) => live && setStaff(members),
      (error: unknown) => {
        if (!live) return;
        if (error instanceof HttpError && error.status === 403) setStaff(error.message);
        else onApiError(error);
      },
    );
    return () => {
      live = false;
    };
  }, [onApiError]);

  useEffect(() => {
    let live = true;
    setList({ rows: [], next: null, loading: true, refusal: null });
    // What the export said was about the previous view.
    setExportState({ busy: false, message: null });
    api.auditPage(apiQuery, { limit: ACTIVITY_PAGE_SIZE }).then(
      ({ rows, next }) => live && setList({ rows, next, loading: false, refusal: null }),
      (error: unknown) => {
        if (!live) return;
        const refusal = refusalOf(error);
        setList({ rows: [], next: null, loading: false, refusal });
        if (!refusal) onApiError(error);
      },
    );
    return () => {
      live = false;
    };
  }, [apiQuery, onApiError]);

  const loadMore = useCallback(() => {
    if (!list.next || list.loading) return;
    setList((current) => ({ ...current, loading: true }));
    api.auditPage(apiQuery, { cursor: list.next, limit: ACTIVITY_PAGE_SIZE }).then(
      ({ rows, next }) => {
        focusRowId.current = rows[0]?.id ?? null;
        setList((current) => ({ rows: [...current.rows, ...rows], next, loading: false, refusal: null }));
        setAnnouncement(`${rows.length} more rows loaded, ${list.rows.length + rows.length} shown${next ? '' : '; that is the end of the log for these filters'}.`);
      },
      (error: unknown) => {
        const refusal = refusalOf(error);
        setList((current) => ({ ...current, loading: false, refusal }));
        if (!refusal) onApiError(error);
      },
    );
  }, [apiQuery, list.next, list.loading, list.rows.length, onApiError]);

  // After "Load more", focus goes to the first new row, so keyboard and screen-reader users carry on where they were.
  useEffect(() => {
    if (!focusRowId.current) return;
    document.getElementById(`audit-${focusRowId.current}`)?.focus();
    focusRowId.current = null;
  }, [list.rows]);

  // A write's link highlights its row: scrolled to and focused once it is on the page.
  useEffect(() => {
    if (!highlight || detailId) return;
    const row = document.getElementById(`audit-${highlight}`);
    row?.scrollIntoView({ block: 'center' });
    row?.focus();
  }, [list.rows, highlight, detailId]);

  // Closing a detail returns focus to the link that opened it (or to the table when that row is not loaded).
  useEffect(() => {
    if (detailId) {
      lastOpened.current = detailId;
      return;
    }
    const opened = lastOpened.current;
    if (!opened) return;
    lastOpened.current = null;
    (document.getElementById(`audit-details-${opened}`) ?? table.current)?.focus();
  }, [detailId]);

  const exportRange = async () => {
    if (!applied.from || !applied.to) {
      setExportState({ busy: false, message: 'Choose the first and last day of the range (From and To), then Show activity, to export it.' });
      return;
    }
    setExportState({ busy: true, message: 'Preparing the export…' });
    try {
      const blob = await api.auditExport(apiQuery);
      download(blob, exportFileName(acting?.name ?? schoolName, applied.from, applied.to));
      setExportState({ busy: false, message: `Exported ${applied.from} to ${applied.to}.` });
    } catch (error) {
      const refusal = refusalOf(error);
      setExportState({ busy: false, message: refusal ?? 'The export failed.' });
      if (!refusal) onApiError(error);
    }
  };

  const knownRoutes = useMemo(() => [...new Set(list.rows.flatMap((row) => (row.route ? [row.route] : [])))].sort(), [list.rows]);
  const highlightMissing = highlight && !list.loading && !list.refusal && !list.rows.some((row) => row.id === highlight);
  const filtered = filterKey !== '';

  return (
    <section className="min-w-0 p-4" aria-labelledby="activity-title">
      <h1 id="activity-title" className="mb-3 text-xl font-semibold">
        Activity in {acting?.name ?? 'your school'}
      </h1>
      {timeZone ? (
        <p className="mb-2 text-sm text-slate-700" data-testid="activity-time-zone">
          Times and days are {timeZoneLabel(timeZone)}.
        </p>
      ) : null}
      {detailId ? <ActivityDetail id={detailId} filters={applied} timeZone={timeZone} onApiError={onApiError} /> : null}
      <div hidden={detailId !== null}>
        <ActivityFiltersForm applied={applied} staff={staff} knownRoutes={knownRoutes} onApply={(next) => (window.location.hash = activityListHref(next))} />
        <div className="mb-3 flex flex-wrap items-center gap-2 text-sm">
          <button
            type="button"
            onClick={() => void exportRange()}
            disabled={exportState.busy}
            className="rounded border border-slate-300 bg-white px-3 py-1.5 hover:bg-slate-100"
            data-testid="export-csv"
          >
            Export CSV
          </button>
          <span className="text-slate-700">of the days and filters shown.</span>
          <span role="status" data-testid="export-status">
            {exportState.message}
          </span>
        </div>
        {highlightMissing ? (
          <p className="mb-2 text-sm">
            The row you followed is not among the newest shown.{' '}
            <a className="text-sky-800 underline" href={activityDetailHref(highlight, applied)}>
              Open it
            </a>
          </p>
        ) : null}
        {list.refusal ? (
          <p role="alert" className="rounded border border-amber-300 bg-amber-50 px-3 py-2 text-amber-900" data-testid="activity-refusal">
            {list.refusal}
          </p>
        ) : list.loading && list.rows.length === 0 ? (
          <p className="text-slate-700">Loading…</p>
        ) : list.rows.length === 0 ? (
          <p className="text-slate-700" data-testid="activity-empty">
            {filtered ? 'Nothing matches these filters.' : 'Nothing recorded yet.'}
          </p>
        ) : (
          <>
            <table ref={table} tabIndex={-1} className="result-table w-full border-collapse rounded-lg bg-white text-sm shadow-sm" data-testid="audit-table">
              <caption className="mb-1 text-left text-sm text-slate-700">
                {`Activity, newest first${filtered ? ', filtered' : ''}: ${list.rows.length} ${list.rows.length === 1 ? 'row' : 'rows'} shown`}
              </caption>
              <thead className="bg-slate-100 text-left">
                <tr>
                  <th scope="col" className="px-3 py-2">When</th>
                  <th scope="col" className="px-3 py-2">Who</th>
                  <th scope="col" className="px-3 py-2">What</th>
                  <th scope="col" className="px-3 py-2">Resource</th>
                  <th scope="col" className="px-3 py-2">Source</th>
                  <th scope="col" className="px-3 py-2">Details</th>
                  {acting ? <th scope="col" className="px-3 py-2">School</th> : null}
                </tr>
              </thead>
              <tbody>
                {list.rows.map((row) => {
                  const what = auditActionLabel(row);
                  const isHighlighted = row.id === highlight;
                  const resource = row.resourceName ?? fieldLabel(row.resourceType);
                  return (
                    <tr
                      key={row.id}
                      id={`audit-${row.id}`}
                      tabIndex={-1}
                      aria-current={isHighlighted ? 'true' : undefined}
                      data-testid="audit-row"
                      data-source={row.source}
                      className={`border-t border-slate-200 ${isHighlighted ? 'bg-amber-100' : row.source === AuditSource.AGENT ? 'bg-violet-50' : ''}`}
                    >
                      <td data-label="When" className="px-3 py-2 sm:whitespace-nowrap">
                        <time dateTime={row.createdAt}>{formatDateTime(row.createdAt, timeZone)}</time>
                      </td>
                      <td data-label="Who" className="px-3 py-2">{whoOf(row)}</td>
                      <td data-label="What" className="px-3 py-2">
                        {what.label}
                        {what.detail ? <span className="block text-xs break-all text-slate-700">{what.detail}</span> : null}
                      </td>
                      <td data-label="Resource" className="px-3 py-2">
                        <span className="break-words">{resource}</span>
                        <span className="block text-xs text-slate-700">{fieldLabel(row.resourceType).toLowerCase()}</span>
                        {row.resourceId ? <CopyId id={row.resourceId} name={resource} /> : null}
                      </td>
                      <td data-label="Source" className="px-3 py-2">
                        <SourceBadge source={row.source} />
                      </td>
                      <td data-label="Details" className="px-3 py-2">
                        <a
                          id={`audit-details-${row.id}`}
                          href={activityDetailHref(row.id, applied)}
                          className="text-sky-800 underline"
                          aria-label={`Details: ${what.label}, ${resource}, ${formatDateTime(row.createdAt, timeZone)}`}
                          data-testid="audit-details-link"
                        >
                          Details
                        </a>
                      </td>
                      {/* The list is the picked school's alone: each row was written there. */}
                      {acting ? (
                        <td data-label="School" className="px-3 py-2" data-testid="audit-school">
                          {acting.name}
                        </td>
                      ) : null}
                    </tr>
                  );
                })}
              </tbody>
            </table>
            <div className="mt-3 flex flex-wrap items-center gap-3 text-sm">
              {list.next ? (
                <button
                  type="button"
                  onClick={loadMore}
                  disabled={list.loading}
                  className="rounded border border-slate-300 bg-white px-3 py-1.5 hover:bg-slate-100"
                  data-testid="load-more"
                >
                  {list.loading ? 'Loading…' : 'Load more'}
                </button>
              ) : (
                <p data-testid="activity-end">That is the end of the log for these filters.</p>
              )}
            </div>
          </>
        )}
        <p role="status" className="sr-only" data-testid="activity-announcement">
          {announcement}
        </p>
      </div>
    </section>
  );
};
