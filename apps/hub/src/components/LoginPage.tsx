import { useState, type FormEvent } from 'react';
import { api } from '../lib/api';

const DEMO_USERS = [
  'admin@greenhill.school',
  'campus.admin@greenhill.school',
  'head@greenhill.school',
  'teacher@greenhill.school',
  'class.teacher@greenhill.school',
  'subject.teacher@greenhill.school',
  'form.tutor@greenhill.school',
  'dos@greenhill.school',
  'admin@lakeside.school',
  'platform@naalya.school',
];

export const LoginPage = ({ onSignedIn }: { onSignedIn: (token: string) => void }) => {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      const { accessToken } = await api.login(email, password);
      onSignedIn(accessToken);
    } catch (caught) {
      setError(caught instanceof Error ? caught.message : 'Sign-in failed.');
      setBusy(false);
    }
  };

  return (
    <main className="flex min-h-screen items-center justify-center p-4">
      <form onSubmit={submit} className="w-full max-w-sm space-y-4 rounded-lg border border-slate-200 bg-white p-6 shadow-sm" aria-labelledby="signin-title">
        <h1 id="signin-title" className="text-xl font-semibold">
          Sign in to the Naalya Hub
        </h1>
        <div className="space-y-1">
          <label htmlFor="email" className="block text-sm font-medium">
            Email
          </label>
          <input
            id="email"
            type="email"
            autoComplete="username"
            list="demo-users"
            required
            autoFocus
            value={email}
            onChange={(event) => setEmail(event.target.value)}
            className="w-full rounded border border-slate-300 px-3 py-2"
          />
          <datalist id="demo-users">
            {DEMO_USERS.map((user) => (
              <option key={user} value={user} />
            ))}
          </datalist>
        </div>
        <div className="space-y-1">
          <label htmlFor="password" className="block text-sm font-medium">
            Password
          </label>
          <input
            id="password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            onChange={(event) => setPassword(event.target.value)}
            className="w-full rounded border border-slate-300 px-3 py-2"
          />
        </div>
        {error ? (
          <p role="alert" className="text-sm text-red-700">
            {error}
          </p>
        ) : null}
        <button type="submit" disabled={busy} className="w-full rounded bg-sky-700 px-3 py-2 font-medium text-white hover:bg-sky-800 disabled:opacity-60">
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p className="text-xs text-slate-500">Demo users share the password naalya-demo.</p>
      </form>
    </main>
  );
};
