import { useEffect, useRef, useState } from 'react';
import { AuditSource } from '@naalya/access';
import type { AuditLogRow } from '@naalya/access';
import { api } from '../lib/api';
import { formatDateTime, timeZoneLabel } from '../lib/dates';
import { useSchool } from '../lib/school-context';
import { toolForAudit, toolLabel } from '../lib/labels';
import { HttpError } from '../lib/sse';

const words = (text: string) => text.replaceAll('_', ' ');

/** The caller's school's activity log, newest first; the agent's writes are marked. */
export const ActivityPage = ({ highlight, onApiError }: { highlight: string | null; onApiError: (error: unknown) => void }) => {
  const [rows, setRows] = useState<AuditLogRow[] | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const highlighted = useRef<HTMLTableRowElement | null>(null);
  const { acting, timeZone } = useSchool();

  useEffect(() => {
    let live = true;
    api.auditLog({ limit: 200 }).then(
      (next) => live && setRows(next),
      (error: unknown) => {
        if (!live) return;
        if (error instanceof HttpError && (error.status === 403 || error.status === 400)) setRefusal(error.message);
        else onApiError(error);
      },
    );
    return () => {
      live = false;
    };
  }, [onApiError]);

  useEffect(() => {
    highlighted.current?.scrollIntoView({ block: 'center' });
    highlighted.current?.focus();
  }, [rows, highlight]);

  return (
    <section className="p-4" aria-labelledby="activity-title">
      <h1 id="activity-title" className="mb-3 text-xl font-semibold">
        Activity in {acting?.name ?? 'your school'}
      </h1>
      {timeZone ? (
        <p className="mb-2 text-sm text-slate-600" data-testid="activity-time-zone">
          Times are {timeZoneLabel(timeZone)}.
        </p>
      ) : null}
      {refusal ? (
        <p role="alert" className="rounded border border-amber-300 bg-amber-50 px-3 py-2 text-amber-900">
          {refusal}
        </p>
      ) : rows === null ? (
        <p className="text-slate-500">Loading…</p>
      ) : rows.length === 0 ? (
        <p className="text-slate-500">Nothing recorded yet.</p>
      ) : (
        <table className="w-full border-collapse overflow-hidden rounded-lg bg-white text-sm shadow-sm" data-testid="audit-table">
          <caption className="sr-only">Audit log, newest first</caption>
          <thead className="bg-slate-100 text-left">
            <tr>
              <th scope="col" className="px-3 py-2">When</th>
              <th scope="col" className="px-3 py-2">Who</th>
              <th scope="col" className="px-3 py-2">Tool or route</th>
              <th scope="col" className="px-3 py-2">Resource</th>
              <th scope="col" className="px-3 py-2">Source</th>
              {acting ? <th scope="col" className="px-3 py-2">School</th> : null}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => {
              const isAgent = row.source === AuditSource.AGENT;
              const tool = isAgent ? toolForAudit(row.action, row.resourceType) : undefined;
              const isHighlighted = row.id === highlight;
              return (
                <tr
                  key={row.id}
                  id={`audit-${row.id}`}
                  ref={isHighlighted ? highlighted : undefined}
                  tabIndex={isHighlighted ? -1 : undefined}
                  aria-current={isHighlighted ? 'true' : undefined}
                  data-testid="audit-row"
                  data-source={row.source}
                  className={`border-t border-slate-100 ${isHighlighted ? 'bg-amber-100' : isAgent ? 'bg-violet-50' : ''}`}
                >
                  <td className="px-3 py-2 whitespace-nowrap">
                    <time dateTime={row.createdAt}>{formatDateTime(row.createdAt, timeZone)}</time>
                  </td>
                  <td className="px-3 py-2">{row.actorName ?? (row.actorType === 'platform_admin' ? 'Platform administrator' : row.actorId)}</td>
                  <td className="px-3 py-2">
                    {tool ? toolLabel(tool) : `${words(row.action)} ${words(row.resourceType)}`}
                    {tool ? <span className="block text-xs text-slate-700">{`${words(row.action)} ${words(row.resourceType)}`}</span> : null}
                  </td>
                  <td className="px-3 py-2">
                    {words(row.resourceType)}
                    {row.resourceId ? <code className="block text-xs text-slate-700">{row.resourceId}</code> : null}
                  </td>
                  <td className="px-3 py-2">
                    {isAgent ? (
                      <span className="rounded-full bg-violet-200 px-2 py-0.5 text-xs font-medium text-violet-900" data-testid="agent-badge">
                        Agent
                      </span>
                    ) : (
                      <span className="text-xs text-slate-600">REST API</span>
                    )}
                  </td>
                  {/* The list is the picked school's alone: each row was written there. */}
                  {acting ? <td className="px-3 py-2" data-testid="audit-school">{acting.name}</td> : null}
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
};
