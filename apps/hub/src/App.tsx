import { useCallback, useEffect, useMemo, useState } from 'react';
import type { AgentRunModeName } from '@naalya/agent-tools';
import { ActivityPage } from './components/ActivityPage';
import { ChatPage } from './components/ChatPage';
import { ConnectedAppsPage } from './components/ConnectedAppsPage';
import { Header, type RunModeChoice } from './components/Header';
import { LoginPage } from './components/LoginPage';
import { UserType, type CallerProfile, type CampusSummary, type SchoolSummary } from '@naalya/access';
import { ActingBanner } from './components/ActingBanner';
import type { AgentMap } from '@naalya/agent-tools';
import { actingSchool } from './lib/acting-school';
import { api } from './lib/api';
import { SchoolContext, type SchoolView } from './lib/school-context';
import { session, tokenExpiry } from './lib/session';
import { HttpError } from './lib/sse';
import { usePageTitle } from './lib/page-title';
import { useRoute } from './lib/route';

export const App = () => {
  const route = useRoute();
  // undefined while a new tab asks the open ones for their session.
  const [token, setToken] = useState<string | null | undefined>(() => session.get() ?? undefined);
  const [me, setMe] = useState<CallerProfile | null>(null);
  const [campuses, setCampuses] = useState<CampusSummary[]>([]);
  const [mode, setMode] = useState<RunModeChoice>({ mode: 'school' });
  const [map, setMap] = useState<AgentMap | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [schools, setSchools] = useState<SchoolSummary[]>([]);
  const [acting, setActing] = useState<SchoolSummary | null>(actingSchool.get);

  const pickSchool = useCallback((school: SchoolSummary | null) => {
    actingSchool.set(school);
    setActing(school);
  }, []);

  const signedOut = useCallback(() => {
    pickSchool(null);
    setSchools([]);
    setToken(null);
    setMe(null);
    setMap(null);
  }, [pickSchool]);
  const signOut = useCallback(() => {
    session.clear();
    signedOut();
  }, [signedOut]);

  useEffect(() => {
    // Only on the tab's first render can the token be undefined.
    if (token === undefined) void session.borrow().then(setToken);
    // Other tabs: a sign-out there is one here; a sign-in there signs in this tab if it waits at the form.
    return session.subscribe({ onSignedIn: setToken, onSignedOut: signedOut });
  }, [signedOut]);

  // A token is dropped when it expires, not when the next request is refused.
  useEffect(() => {
    const expiry = token ? tokenExpiry(token) : null;
    if (expiry === null) return undefined;
    const timer = setTimeout(signOut, Math.max(0, Math.min(expiry - Date.now(), 2_147_000_000)));
    return () => clearTimeout(timer);
  }, [token, signOut]);

  // An expired or revoked session sends the user back to the sign-in form, whatever page asked.
  const onApiError = useCallback(
    (caught: unknown) => {
      if (caught instanceof HttpError && caught.status === 401) signOut();
      else setError(caught instanceof Error ? caught.message : String(caught));
    },
    [signOut],
  );

  useEffect(() => {
    if (!token) return;
    let live = true;
    api
      .me()
      .then(async (who) => {
        if (!live) return;
        setMe(who);
        if (who.userType === UserType.PLATFORM_ADMIN) {
          const listed = await api.schools();
          if (!live) return;
          setSchools(listed);
          // The picked school as the server has it now (renamed, its zone changed, or gone), kept across reloads.
          const picked = actingSchool.get();
          if (picked) pickSchool(listed.find((school) => school.id === picked.id) ?? null);
        }
        const visible = await api.campuses().catch(() => [] as CampusSummary[]);
        // A campus-limited member of staff may only open a chat on their own campus.
        if (live) setCampuses(who.campusId ? visible.filter((campus) => campus.id === who.campusId) : visible);
      })
      .catch(onApiError);
    return () => {
      live = false;
    };
  }, [token, onApiError, pickSchool]);

  const schoolView = useMemo<SchoolView>(() => {
    const isPlatform = me?.userType === UserType.PLATFORM_ADMIN;
    return { isPlatform, acting: isPlatform ? acting : null, schools, timeZone: (isPlatform ? acting?.timeZone : me?.schoolTimeZone) ?? undefined };
  }, [me, acting, schools]);

  const modeName: AgentRunModeName = mode.mode;
  useEffect(() => {
    if (!me) return;
    let live = true;
    api
      .map(modeName)
      .then((next) => live && setMap(next))
      .catch(onApiError);
    return () => {
      live = false;
    };
  }, [me, modeName, onApiError]);

  usePageTitle(!token ? 'Sign in' : route.page === 'activity' ? 'Activity' : route.page === 'apps' ? 'Connected apps' : null);

  if (token === undefined) return <p className="p-4 text-slate-700">Opening your session…</p>;
  if (!token) {
    return (
      <LoginPage
        onSignedIn={(accessToken) => {
          session.set(accessToken);
          pickSchool(null);
          setError(null);
          setToken(accessToken);
        }}
      />
    );
  }

  return (
    <SchoolContext.Provider value={schoolView}>
    <div className="flex min-h-screen flex-col">
      <Header me={me} map={map} campuses={campuses} mode={mode} onModeChange={setMode} route={route} onSignOut={signOut} onPickSchool={pickSchool} />
      <ActingBanner />
      {error ? (
        <div role="alert" className="mx-4 mt-3 rounded border border-red-300 bg-red-50 px-3 py-2 text-sm text-red-800">
          {error}{' '}
          <button type="button" className="underline" onClick={() => setError(null)}>
            Dismiss
          </button>
        </div>
      ) : null}
      {/* Another school is another page: everything on it is read again, in that school. */}
      <main className="flex flex-1 flex-col" key={schoolView.acting?.id ?? 'own'}>
        {route.page === 'activity' ? (
          <ActivityPage
            highlight={route.highlight}
            detailId={route.detailId}
            filters={route.filters}
            schoolName={me?.schoolName ?? null}
            onApiError={onApiError}
          />
        ) : route.page === 'apps' ? (
          <ConnectedAppsPage campuses={campuses} onApiError={onApiError} />
        ) : (
          <ChatPage threadId={route.threadId} mode={mode} onApiError={onApiError} />
        )}
      </main>
    </div>
    </SchoolContext.Provider>
  );
};
