import { useEffect, useState } from 'react';

/** Hash routes (#/chat, #/chat/<threadId>, #/activity?highlight=<auditId>): the server serves one file, no fallback needed. */
export type Route = { page: 'chat'; threadId: string | null } | { page: 'activity'; highlight: string | null };

export const parseRoute = (hash: string): Route => {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'activity') return { page: 'activity', highlight: new URLSearchParams(query).get('highlight') };
  return { page: 'chat', threadId: parts[0] === 'chat' && parts[1] ? decodeURIComponent(parts[1]) : null };
};

export const chatHref = (threadId?: string | null) => (threadId ? `#/chat/${encodeURIComponent(threadId)}` : '#/chat');
export const activityHref = (highlight?: string) => (highlight ? `#/activity?highlight=${encodeURIComponent(highlight)}` : '#/activity');

export const useRoute = (): Route => {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
};
