import { useCallback, useEffect, useState } from 'react';
import type { CampusSummary, ConnectedApp, ConnectedAppCreated } from '@naalya/access';
import { api } from '../lib/api';
import { formatDateTime } from '../lib/dates';
import { HttpError } from '../lib/sse';

const DEFAULT_DAYS = 30;

/**
 * Connected apps: tokens for MCP clients (desktop or IDE assistants) to use the platform's tools as the signed-in
 * person, in the whole school or one campus. A new token is shown once; revoking one ends its sessions.
 */
export const ConnectedAppsPage = ({ campuses, onApiError }: { campuses: CampusSummary[]; onApiError: (error: unknown) => void }) => {
  const [apps, setApps] = useState<ConnectedApp[] | null>(null);
  const [created, setCreated] = useState<ConnectedAppCreated | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const [name, setName] = useState('');
  const [campusId, setCampusId] = useState('');
  const [days, setDays] = useState(DEFAULT_DAYS);
  const [busy, setBusy] = useState(false);

  // A refusal the person can act on (a limit, a bad value) is said here; anything else goes to the app's handler.
  const said = useCallback(
    (error: unknown) => {
      if (error instanceof HttpError && error.status !== 401 && error.status < 500) setRefusal(error.message);
      else onApiError(error);
    },
    [onApiError],
  );

  const reload = useCallback(() => api.connectedApps().then(setApps, said), [said]);
  useEffect(() => {
    void reload();
  }, [reload]);

  const campusName = (id: string | null) => (id === null ? 'Whole school' : (campuses.find((campus) => campus.id === id)?.name ?? 'One campus'));

  return (
    <section className="max-w-4xl p-4" aria-labelledby="apps-title">
      <h1 id="apps-title" className="mb-1 text-xl font-semibold">
        Connected apps
      </h1>
      <p className="mb-4 text-sm text-slate-700">
        An MCP client (a desktop or IDE assistant) can use the tools Rover uses, as you, with a token made here. Give it the
        MCP address of this server and the token as a bearer token. Changes it makes are in Activity, marked as MCP.
      </p>

      <form
        className="mb-4 flex flex-wrap items-end gap-3 rounded border border-slate-200 p-3"
        onSubmit={(event) => {
          event.preventDefault();
          setBusy(true);
          setRefusal(null);
          api
            .createConnectedApp({ name: name.trim(), expiresInDays: days, ...(campusId ? { campusId } : {}) })
            .then((next) => {
              setCreated(next);
              setName('');
              return reload();
            }, said)
            .finally(() => setBusy(false));
        }}
      >
        <label className="flex flex-col text-sm">
          Name
          <input required maxLength={100} value={name} onChange={(event) => setName(event.target.value)} className="rounded border border-slate-300 px-2 py-1" placeholder="My desktop assistant" />
        </label>
        <label className="flex flex-col text-sm">
          Works in
          <select value={campusId} onChange={(event) => setCampusId(event.target.value)} className="rounded border border-slate-300 px-2 py-1">
            <option value="">Whole school</option>
            {campuses.map((campus) => (
              <option key={campus.id} value={campus.id}>
                {campus.name} campus
              </option>
            ))}
          </select>
        </label>
        <label className="flex flex-col text-sm">
          Expires after (days)
          <input type="number" min={1} max={90} required value={days} onChange={(event) => setDays(Number(event.target.value))} className="w-28 rounded border border-slate-300 px-2 py-1" />
        </label>
        <button type="submit" disabled={busy} className="rounded bg-sky-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-sky-800 disabled:opacity-60">
          Create token
        </button>
      </form>

      {refusal ? (
        <p role="alert" className="mb-3 rounded border border-amber-300 bg-amber-50 px-3 py-2 text-sm text-amber-900">
          {refusal}
        </p>
      ) : null}

      {created ? (
        <div role="status" className="mb-4 rounded border border-emerald-300 bg-emerald-50 p-3 text-sm">
          <p className="mb-1 font-medium">Token for “{created.name}”: copy it now, it is not shown again.</p>
          <code data-testid="new-token" className="block break-all rounded bg-white px-2 py-1">
            {created.token}
          </code>
          <p className="mt-1 text-slate-700">MCP address: {created.audience}</p>
        </div>
      ) : null}

      {apps === null ? (
        <p className="text-slate-600">Loading your connected apps…</p>
      ) : apps.length === 0 ? (
        <p className="text-slate-600">No connected apps yet.</p>
      ) : (
        <table className="w-full text-left text-sm">
          <thead>
            <tr className="border-b border-slate-200">
              <th className="py-1 pr-3">Name</th>
              <th className="py-1 pr-3">Works in</th>
              <th className="py-1 pr-3">Created</th>
              <th className="py-1 pr-3">Expires</th>
              <th className="py-1 pr-3">Last used</th>
              <th className="py-1">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {apps.map((app) => (
              <tr key={app.id} className="border-b border-slate-100">
                <td className="py-1 pr-3">{app.name}</td>
                <td className="py-1 pr-3">{campusName(app.campusId)}</td>
                <td className="py-1 pr-3">{formatDateTime(app.createdAt)}</td>
                <td className="py-1 pr-3">{formatDateTime(app.expiresAt)}</td>
                <td className="py-1 pr-3">{app.lastUsedAt ? formatDateTime(app.lastUsedAt) : 'Never'}</td>
                <td className="py-1">
                  <button
                    type="button"
                    aria-label={`Revoke ${app.name}`}
                    className="rounded border border-red-300 px-2 py-0.5 text-red-800 hover:bg-red-50"
                    onClick={() => {
                      api.revokeConnectedApp(app.id).then(reload, said);
                    }}
                  >
                    Revoke
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
};
