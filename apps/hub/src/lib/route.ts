import { useEffect, useState } from 'react';
import { filtersFromQuery, filtersToQuery, type ActivityFilters } from './activity-filters';

/**
 * Hash routes: the server serves one file, no fallback needed. #/chat, #/chat/<threadId>; #/activity with its filters
 * in the query (?person=&tool=&route=&source=&from=&to=) and ?highlight=<auditId> from a write's link; one row's
 * detail at #/activity/<auditId>, keeping the list's filters so going back returns to the same view.
 */
export type Route =
  | { page: 'chat'; threadId: string | null }
  | { page: 'activity'; highlight: string | null; detailId: string | null; filters: ActivityFilters }
  | { page: 'apps' };

export const parseRoute = (hash: string): Route => {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').filter(Boolean);
  if (parts[0] === 'activity') {
    const params = new URLSearchParams(query);
    return {
      page: 'activity',
      highlight: params.get('highlight'),
      detailId: parts[1] ? decodeURIComponent(parts[1]) : null,
      filters: filtersFromQuery(params),
    };
  }
  // #/apps: the caller's connected apps (MCP clients).
  if (parts[0] === 'apps') return { page: 'apps' };
  return { page: 'chat', threadId: parts[0] === 'chat' && parts[1] ? decodeURIComponent(parts[1]) : null };
};

export const appsHref = () => '#/apps';

const withQuery = (path: string, query: URLSearchParams) => (query.size ? `${path}?${query}` : path);

export const chatHref = (threadId?: string | null) => (threadId ? `#/chat/${encodeURIComponent(threadId)}` : '#/chat');
export const activityHref = (highlight?: string) => (highlight ? `#/activity?highlight=${encodeURIComponent(highlight)}` : '#/activity');
/** The list filtered as given. */
export const activityListHref = (filters: ActivityFilters) => withQuery('#/activity', filtersToQuery(filters));
/** One row's detail, remembering the list's filters. */
export const activityDetailHref = (id: string, filters: ActivityFilters) => withQuery(`#/activity/${encodeURIComponent(id)}`, filtersToQuery(filters));

export const useRoute = (): Route => {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return route;
};
