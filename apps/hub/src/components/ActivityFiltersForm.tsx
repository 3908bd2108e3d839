import { useEffect, useId, useState, type FormEvent } from 'react';
import type { AuditSource } from '@naalya/access';
import { AUDIT_SOURCES, isRoute, sourceLabel, type ActivityFilters } from '../lib/activity-filters';
import type { StaffMember } from '../lib/api';
import { writeTools } from '../lib/labels';

const TOOLS = writeTools();
const fieldClass = 'w-full min-w-0 rounded border border-slate-400 bg-white px-2 py-1';

type Props = {
  applied: ActivityFilters;
  /** The staff by name, or the server's sentence when the caller may not list them. */
  staff: StaffMember[] | string | null;
  /** Routes seen on the pages loaded so far: suggestions, since a route is typed. */
  knownRoutes: string[];
  onApply: (filters: ActivityFilters) => void;
};

/** The Activity filters as a form: nothing is fetched until it is applied, and applying puts them in the URL. */
export const ActivityFiltersForm = ({ applied, staff, knownRoutes, onApply }: Props) => {
  const [draft, setDraft] = useState<ActivityFilters>(applied);
  const [routeError, setRouteError] = useState<string | null>(null);
  const routesId = useId();
  const routeErrorId = useId();
  const staffNoteId = useId();
  const ids = { person: useId(), tool: useId(), route: useId(), source: useId(), from: useId(), to: useId() };
  // The URL changed (a link, back, a shared view): the form shows what is applied.
  useEffect(() => setDraft(applied), [applied]);

  const set = (key: keyof ActivityFilters, value: string) => setDraft((current) => ({ ...current, [key]: value || undefined }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const route = draft.route?.trim();
    if (route && !isRoute(route)) {
      setRouteError('A route is a method and a path, as the rows show it: POST /departments');
      return;
    }
    setRouteError(null);
    onApply({ ...draft, route: route || undefined });
  };

  const people = Array.isArray(staff) ? staff : [];
  const personUnknown = draft.person !== undefined && !people.some((member) => member.id === draft.person);
  return (
    <form onSubmit={submit} className="mb-4 grid grid-cols-1 gap-3 rounded-lg bg-white p-3 shadow-sm sm:grid-cols-2 lg:grid-cols-3" aria-label="Filter the activity">
      <div className="flex flex-col gap-1 text-sm">
        <label htmlFor={ids.person}>Person</label>
        <select
          id={ids.person}
          className={fieldClass}
          value={draft.person ?? ''}
          onChange={(event) => set('person', event.target.value)}
          aria-describedby={typeof staff === 'string' ? staffNoteId : undefined}
        >
          <option value="">Anyone</option>
          {personUnknown ? <option value={draft.person}>The person in the link</option> : null}
          {people.map((member) => (
            <option key={member.id} value={member.id}>
              {member.fullName}
              {member.campusName ? ` (${member.campusName})` : ''}
            </option>
          ))}
        </select>
        {typeof staff === 'string' ? (
          <span id={staffNoteId} className="text-xs text-slate-700">
            The staff list is not available to you ({staff}).
          </span>
        ) : null}
      </div>
      <div className="flex flex-col gap-1 text-sm">
        <label htmlFor={ids.tool}>Tool</label>
        <select id={ids.tool} className={fieldClass} value={draft.tool ?? ''} onChange={(event) => set('tool', event.target.value)}>
          <option value="">Any tool</option>
          {TOOLS.map((tool) => (
            <option key={tool.name} value={tool.name}>
              {tool.label}
            </option>
          ))}
        </select>
      </div>
      <div className="flex flex-col gap-1 text-sm">
        <label htmlFor={ids.route}>REST route</label>
        <input
          id={ids.route}
          className={fieldClass}
          value={draft.route ?? ''}
          onChange={(event) => set('route', event.target.value)}
          list={routesId}
          placeholder="POST /departments"
          spellCheck={false}
          aria-invalid={routeError ? true : undefined}
          aria-describedby={routeError ? routeErrorId : undefined}
        />
        <datalist id={routesId}>
          {knownRoutes.map((route) => (
            <option key={route} value={route} />
          ))}
        </datalist>
        {routeError ? (
          <span id={routeErrorId} className="text-xs text-red-800">
            {routeError}
          </span>
        ) : null}
      </div>
      <div className="flex flex-col gap-1 text-sm">
        <label htmlFor={ids.source}>Source</label>
        <select id={ids.source} className={fieldClass} value={draft.source ?? ''} onChange={(event) => set('source', event.target.value as AuditSource)}>
          <option value="">Any source</option>
          {AUDIT_SOURCES.map((source) => (
            <option key={source} value={source}>
              {sourceLabel(source)}
            </option>
          ))}
        </select>
      </div>
      <div className="flex flex-col gap-1 text-sm">
        <label htmlFor={ids.from}>From (first day)</label>
        <input id={ids.from} type="date" className={fieldClass} value={draft.from ?? ''} onChange={(event) => set('from', event.target.value)} />
      </div>
      <div className="flex flex-col gap-1 text-sm">
        <label htmlFor={ids.to}>To (last day)</label>
        <input id={ids.to} type="date" className={fieldClass} value={draft.to ?? ''} onChange={(event) => set('to', event.target.value)} />
      </div>
      <div className="flex flex-wrap items-center gap-2 sm:col-span-2 lg:col-span-3">
        <button type="submit" className="rounded bg-sky-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-sky-800">
          Show activity
        </button>
        <button
          type="button"
          className="rounded border border-slate-300 px-3 py-1.5 text-sm hover:bg-slate-100"
          onClick={() => {
            setDraft({});
            setRouteError(null);
            onApply({});
          }}
        >
          Clear filters
        </button>
      </div>
    </form>
  );
};
