import { UserType, type CallerProfile, type CampusSummary, type SchoolSummary } from '@naalya/access';
import { SPEAKER_HATS, type AgentMap } from '@naalya/agent-tools';
import { timeZoneLabel } from '../lib/dates';
import { toolLabel } from '../lib/labels';
import { activityHref, appsHref, chatHref, type Route } from '../lib/route';
import { useSchool } from '../lib/school-context';

export type RunModeChoice = { mode: 'school' } | { mode: 'campus'; campus: CampusSummary };

type Props = {
  me: CallerProfile | null;
  map: AgentMap | null;
  campuses: CampusSummary[];
  mode: RunModeChoice;
  onModeChange: (mode: RunModeChoice) => void;
  route: Route;
  onSignOut: () => void;
  onPickSchool: (school: SchoolSummary | null) => void;
};

/** A platform administrator's choice of the school they act in; none is the read-only view across every school. */
const SchoolPicker = ({ onPickSchool }: { onPickSchool: Props['onPickSchool'] }) => {
  const { acting, schools } = useSchool();
  return (
    <label className="flex items-center gap-1" data-testid="school-picker-field">
      <span>Acting in</span>
      <select
        value={acting?.id ?? ''}
        onChange={(event) => onPickSchool(schools.find((school) => school.id === event.target.value) ?? null)}
        className="rounded border border-slate-300 px-2 py-1"
        data-testid="school-picker"
      >
        <option value="">Every school (read only)</option>
        {schools.map((school) => (
          <option key={school.id} value={school.id}>
            {school.name}
          </option>
        ))}
      </select>
    </label>
  );
};

const navClass = (active: boolean) =>
  `rounded px-3 py-1.5 text-sm font-medium ${active ? 'bg-sky-100 text-sky-900' : 'text-slate-700 hover:bg-slate-100'}`;

export const Header = ({ me, map, campuses, mode, onModeChange, route, onSignOut, onPickSchool }: Props) => {
  const isPlatform = me?.userType === UserType.PLATFORM_ADMIN;
  const { timeZone } = useSchool();
  return (
    <header className="border-b border-slate-200 bg-white">
      <div className="flex flex-wrap items-center gap-4 px-4 py-3">
        <span className="text-lg font-semibold text-sky-800">Naalya Hub</span>
        <nav aria-label="Main" className="flex gap-1">
          <a href={chatHref(route.page === 'chat' ? route.threadId : null)} className={navClass(route.page === 'chat')} aria-current={route.page === 'chat' ? 'page' : undefined}>
            Chat
          </a>
          <a href={activityHref()} className={navClass(route.page === 'activity')} aria-current={route.page === 'activity' ? 'page' : undefined}>
            Activity
          </a>
          <a href={appsHref()} className={navClass(route.page === 'apps')} aria-current={route.page === 'apps' ? 'page' : undefined}>
            Connected apps
          </a>
        </nav>
        <div className="ml-auto flex min-w-0 flex-wrap items-center gap-3 text-sm" data-testid="whoami">
          {me ? (
            <span className="min-w-0 break-words">
              Signed in as <strong>{me.fullName}</strong> ({me.email}) ·{' '}
              <span data-testid="school">{isPlatform ? 'Platform administrator' : (me.schoolName ?? 'Your school')}</span>
              {me.campusName ? <span> · {me.campusName} campus</span> : null}
              {!isPlatform && timeZone ? <span className="text-slate-600" data-testid="school-time-zone"> · dates in {timeZoneLabel(timeZone)}</span> : null}
              {me.roles.length ? <span className="text-slate-500"> · {me.roles.join(', ')}</span> : null}
            </span>
          ) : (
            <span className="text-slate-500">Loading who you are…</span>
          )}
          {isPlatform ? <SchoolPicker onPickSchool={onPickSchool} /> : null}
          <button type="button" onClick={onSignOut} className="rounded border border-slate-300 px-2 py-1 hover:bg-slate-100">
            Sign out
          </button>
        </div>
      </div>
      <div className="flex flex-wrap items-center gap-4 border-t border-slate-100 px-4 py-2 text-sm">
        <fieldset className="flex items-center gap-3">
          <legend className="sr-only">Where this chat works</legend>
          <label className="flex items-center gap-1">
            <input type="radio" name="run-mode" checked={mode.mode === 'school'} onChange={() => onModeChange({ mode: 'school' })} />
            Whole school
          </label>
          <label className="flex items-center gap-1">
            <input
              type="radio"
              name="run-mode"
              disabled={campuses.length === 0}
              checked={mode.mode === 'campus'}
              onChange={() => {
                const [first] = campuses;
                if (first) onModeChange({ mode: 'campus', campus: first });
              }}
            />
            One campus
          </label>
          {mode.mode === 'campus' ? (
            <select
              aria-label="Campus"
              value={mode.campus.id}
              onChange={(event) => {
                const campus = campuses.find((candidate) => candidate.id === event.target.value);
                if (campus) onModeChange({ mode: 'campus', campus });
              }}
              className="rounded border border-slate-300 px-2 py-1"
            >
              {campuses.map((campus) => (
                <option key={campus.id} value={campus.id}>
                  {campus.name}
                </option>
              ))}
            </select>
          ) : null}
        </fieldset>
        <section aria-label="Who can help this turn" className="flex flex-wrap items-center gap-2" data-testid="roster">
          <span className="text-slate-500">This turn:</span>
          {map?.roster.map((entry) => (
            <details key={entry.speaker} className="group relative">
              <summary className="cursor-pointer list-none rounded-full border border-sky-200 bg-sky-50 px-3 py-0.5 text-sky-900">
                {entry.name}
                {entry.speaker === 'rover' ? '' : ` (${SPEAKER_HATS[entry.speaker]})`}
                <span className="text-sky-700"> · {entry.tools.length} tools</span>
              </summary>
              <ul className="absolute z-10 mt-1 max-h-64 w-64 max-w-[calc(100vw-2rem)] overflow-auto rounded border border-slate-200 bg-white p-2 text-xs shadow">
                {entry.tools.map((tool) => (
                  <li key={tool}>{toolLabel(tool)}</li>
                ))}
              </ul>
            </details>
          )) ?? <span className="text-slate-500">…</span>}
        </section>
      </div>
    </header>
  );
};
