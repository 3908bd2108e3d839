/**
 * The signed-in session, shared by the Hub's open tabs and by nothing else.
 *
 * The server hands out a bearer token only (no cookie, no refresh), so the token is kept where the least can reach it
 * for the shortest time: each tab's sessionStorage (gone when the tab closes, never written to disk as localStorage
 * is). A new tab asks the open ones for it over a same-origin BroadcastChannel; signing in or out in one tab does the
 * same in every tab; a token past its `exp` is dropped, and the server's 401 signs out whatever this clock misses.
 * With no Hub tab open, nothing holds the token, and the next tab signs in afresh.
 */

const TOKEN_KEY = 'naalya.hub.token';
const CHANNEL_NAME = 'naalya.hub.session';
/** How long a new tab waits for an open one to hand over the token before it shows the sign-in form. */
export const BORROW_TIMEOUT_MS = 400;
/** A token this close to its expiry is treated as expired: a request sent with it would land after it ends. */
const EXPIRY_MARGIN_MS = 5_000;

type SessionMessage = { type: 'ask' } | { type: 'token'; token: string } | { type: 'signed-out' };

/** The token's expiry (ms since the epoch) from its JWT payload, or null if it names none or is not a JWT. */
export const tokenExpiry = (token: string): number | null => {
  const payload = token.split('.')[1];
  if (!payload) return null;
  try {
    const json = atob(payload.replaceAll('-', '+').replaceAll('_', '/').padEnd(Math.ceil(payload.length / 4) * 4, '='));
    const exp = (JSON.parse(json) as { exp?: unknown }).exp;
    return typeof exp === 'number' ? exp * 1000 : null;
  } catch {
    return null;
  }
};

export const isTokenLive = (token: string, now = Date.now()): boolean => {
  const expiry = tokenExpiry(token);
  return expiry === null || expiry - EXPIRY_MARGIN_MS > now;
};

const channel: BroadcastChannel | null = typeof BroadcastChannel === 'undefined' ? null : new BroadcastChannel(CHANNEL_NAME);

const read = (): string | null => {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token && !isTokenLive(token)) {
    sessionStorage.removeItem(TOKEN_KEY);
    return null;
  }
  return token;
};

// A tab that holds a live token hands it to a new tab that asks.
channel?.addEventListener('message', (event: MessageEvent<SessionMessage>) => {
  if (event.data.type !== 'ask') return;
  const token = read();
  if (token) channel.postMessage({ type: 'token', token } satisfies SessionMessage);
});

export const session = {
  /** This tab's token, null if it has none or it expired. */
  get: read,
  /** Signs this tab in, and every open tab still at the sign-in form. */
  set: (token: string) => {
    sessionStorage.setItem(TOKEN_KEY, token);
    channel?.postMessage({ type: 'token', token } satisfies SessionMessage);
  },
  /** Signs this tab out, and every other open tab. */
  clear: () => {
    sessionStorage.removeItem(TOKEN_KEY);
    channel?.postMessage({ type: 'signed-out' } satisfies SessionMessage);
  },
  /** Asks the open tabs for their token: the first live one answered within `timeoutMs`, kept for this tab, or null. */
  borrow: (timeoutMs = BORROW_TIMEOUT_MS): Promise<string | null> =>
    new Promise((resolve) => {
      if (!channel) return resolve(null);
      const done = (token: string | null) => {
        clearTimeout(timer);
        channel.removeEventListener('message', onMessage);
        if (token) sessionStorage.setItem(TOKEN_KEY, token);
        resolve(token);
      };
      const onMessage = (event: MessageEvent<SessionMessage>) => {
        if (event.data.type === 'token' && isTokenLive(event.data.token)) done(event.data.token);
      };
      const timer = setTimeout(() => done(null), timeoutMs);
      channel.addEventListener('message', onMessage);
      channel.postMessage({ type: 'ask' } satisfies SessionMessage);
    }),
  /**
   * What other tabs do: `onSignedOut` when one signs out; `onSignedIn` when one signs in while this tab has no token
   * (a tab already signed in keeps its own).
   */
  subscribe: (handlers: { onSignedIn: (token: string) => void; onSignedOut: () => void }): (() => void) => {
    if (!channel) return () => undefined;
    const onMessage = (event: MessageEvent<SessionMessage>) => {
      if (event.data.type === 'signed-out') {
        sessionStorage.removeItem(TOKEN_KEY);
        handlers.onSignedOut();
      } else if (event.data.type === 'token' && !read() && isTokenLive(event.data.token)) {
        sessionStorage.setItem(TOKEN_KEY, event.data.token);
        handlers.onSignedIn(event.data.token);
      }
    };
    channel.addEventListener('message', onMessage);
    return () => channel.removeEventListener('message', onMessage);
  },
};
