import { AuditSource } from '@naalya/access';
import { addDays, dayStart, isDay } from './dates';

/**
 * What the Activity page is filtered by, as its URL keeps it (#/activity?person=…&source=agent&from=2026-12-01): a
 * filtered view survives a reload and can be shared. The days are calendar days in the school's zone, both included.
 */
export type ActivityFilters = {
  /** The person who made the change (picked by name; the URL keeps their id). */
  person?: string;
  tool?: string;
  /** "POST /departments", as the rows show it. */
  route?: string;
  source?: AuditSource;
  from?: string;
  to?: string;
};

export const FILTER_KEYS = ['person', 'tool', 'route', 'source', 'from', 'to'] as const satisfies readonly (keyof ActivityFilters)[];

/** Every source a row can have, from the shared list: a new one (MCP) shows up in the filter by itself. */
export const AUDIT_SOURCES: readonly AuditSource[] = Object.values(AuditSource);

const SOURCE_LABELS: Partial<Record<string, string>> = { [AuditSource.HTTP]: 'REST API', [AuditSource.AGENT]: 'Agent' };
/** "REST API", "Agent"; a source without a label of its own reads as its name in capitals ("MCP"). */
export const sourceLabel = (source: string): string => SOURCE_LABELS[source] ?? source.toUpperCase();

// The server's own rules for each value (audit-log.controller.ts): a link edited by hand loses the bad value here
// rather than turning the whole page into a 400.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TOOL = /^[a-z][a-z0-9_]{0,63}$/;
const ROUTE = /^(GET|POST|PUT|PATCH|DELETE) \/[A-Za-z0-9/:_.-]{0,200}$/;

const VALID: { [key in keyof ActivityFilters]-?: (value: string) => boolean } = {
  person: (value) => UUID.test(value),
  tool: (value) => TOOL.test(value),
  route: (value) => ROUTE.test(value),
  source: (value) => (AUDIT_SOURCES as readonly string[]).includes(value),
  from: isDay,
  to: isDay,
};

/** Whether a typed route has the shape the server takes ("POST /departments"). */
export const isRoute = (value: string): boolean => VALID.route(value);

/** The filters a query string names; a value that could not be valid is left out. */
export const filtersFromQuery = (query: URLSearchParams): ActivityFilters => {
  const filters: ActivityFilters = {};
  for (const key of FILTER_KEYS) {
    const value = query.get(key)?.trim();
    if (value && VALID[key](value)) (filters as Record<string, string>)[key] = value;
  }
  return filters;
};

/** The query string of the filters, in a fixed order so the same view has the same URL. */
export const filtersToQuery = (filters: ActivityFilters): URLSearchParams => {
  const query = new URLSearchParams();
  for (const key of FILTER_KEYS) {
    const value = filters[key];
    if (value) query.set(key, value);
  }
  return query;
};

export const sameFilters = (a: ActivityFilters, b: ActivityFilters): boolean => filtersToQuery(a).toString() === filtersToQuery(b).toString();

/**
 * The filters as GET /audit-log and its CSV export take them: the first day from its midnight in the zone, the last
 * day up to the next day's midnight (the API's `to` is exclusive), so "1 to 6 December" holds all of 6 December.
 */
export const filtersToApiQuery = (filters: ActivityFilters, timeZone?: string): URLSearchParams => {
  const query = new URLSearchParams();
  if (filters.person) query.set('actorId', filters.person);
  if (filters.tool) query.set('tool', filters.tool);
  if (filters.route) query.set('route', filters.route);
  if (filters.source) query.set('source', filters.source);
  if (filters.from) query.set('from', dayStart(filters.from, timeZone));
  if (filters.to) query.set('to', dayStart(addDays(filters.to, 1), timeZone));
  return query;
};

/** The export's file name: the school and the range, "activity-greenhill-school-2026-12-01-to-2026-12-06.csv". */
export const exportFileName = (schoolName: string | null, from: string, to: string): string => {
  const school = (schoolName ?? 'school')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return `activity-${school || 'school'}-${from}-to-${to}.csv`;
};
