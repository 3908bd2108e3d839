import { AuditSource } from '@naalya/access';
import { describe, expect, it } from 'vitest';
import { AUDIT_SOURCES, exportFileName, filtersFromQuery, filtersToApiQuery, filtersToQuery, sameFilters, sourceLabel } from './activity-filters';
import { activityDetailHref, activityListHref, parseRoute } from './route';

const PERSON = '0b6f1d2a-3c4e-4f50-8a61-7b8c9d0e1f20';

describe('Activity filters in the URL', () => {
  it('round-trips every filter through the query string, in a fixed order', () => {
    const filters = { person: PERSON, tool: 'delete_department', route: 'POST /departments', source: AuditSource.AGENT, from: '2026-12-01', to: '2026-12-06' };
    const query = filtersToQuery(filters);
    expect(query.toString()).toBe(`person=${PERSON}&tool=delete_department&route=POST+%2Fdepartments&source=agent&from=2026-12-01&to=2026-12-06`);
    expect(filtersFromQuery(query)).toEqual(filters);
    expect(filtersToQuery({ to: '2026-12-06', source: AuditSource.HTTP }).toString()).toBe('source=http&to=2026-12-06');
  });

  it('drops a value the server would refuse (a typed id, an unknown source, a day that does not exist, a bare path)', () => {
    const query = new URLSearchParams({ person: 'Grace', tool: 'Drop Table', route: '/departments', source: 'email', from: '2026-02-30', to: '06/12/2026' });
    expect(filtersFromQuery(query)).toEqual({});
    expect(filtersFromQuery(new URLSearchParams('source=agent&from=2026-02-28&extra=1'))).toEqual({ source: 'agent', from: '2026-02-28' });
  });

  it('parses the list, the highlighted row and one row’s detail from the hash, keeping the filters for the way back', () => {
    expect(parseRoute('#/activity?highlight=abc')).toEqual({ page: 'activity', highlight: 'abc', detailId: null, filters: {} });
    const list = activityListHref({ source: AuditSource.AGENT, from: '2026-12-01' });
    expect(list).toBe('#/activity?source=agent&from=2026-12-01');
    expect(parseRoute(list)).toEqual({ page: 'activity', highlight: null, detailId: null, filters: { source: 'agent', from: '2026-12-01' } });
    const detail = activityDetailHref(PERSON, { tool: 'create_department' });
    expect(detail).toBe(`#/activity/${PERSON}?tool=create_department`);
    expect(parseRoute(detail)).toEqual({ page: 'activity', highlight: null, detailId: PERSON, filters: { tool: 'create_department' } });
    expect(activityListHref({})).toBe('#/activity');
    expect(parseRoute('#/chat/t1')).toEqual({ page: 'chat', threadId: 't1' });
  });

  it('tells filter sets apart by value, not by object identity', () => {
    expect(sameFilters({ source: AuditSource.AGENT }, { source: AuditSource.AGENT })).toBe(true);
    expect(sameFilters({ source: AuditSource.AGENT }, { source: AuditSource.AGENT, to: '2026-12-06' })).toBe(false);
  });
});

describe('Activity filters as the API takes them', () => {
  it('names the person actorId and gives the range as instants: the first day from midnight, the last day whole', () => {
    const query = filtersToApiQuery({ person: PERSON, source: AuditSource.HTTP, from: '2026-12-01', to: '2026-12-06' }, 'UTC');
    expect(Object.fromEntries(query)).toEqual({ actorId: PERSON, source: 'http', from: '2026-12-01T00:00:00.000Z', to: '2026-12-07T00:00:00.000Z' });
  });

  it("reads the days in the school's zone once one is passed (Kampala is 3 hours ahead of UTC)", () => {
    const query = filtersToApiQuery({ from: '2026-12-01', to: '2026-12-31' }, 'Africa/Kampala');
    expect(query.get('from')).toBe('2026-11-30T21:00:00.000Z');
    expect(query.get('to')).toBe('2026-12-31T21:00:00.000Z');
  });

  it('leaves out what is not filtered', () => {
    expect(filtersToApiQuery({}).toString()).toBe('');
  });
});

describe('sources and the export file', () => {
  it('lists every source AuditSource has, each with a label; one without a label of its own reads in capitals', () => {
    expect(AUDIT_SOURCES).toEqual(Object.values(AuditSource));
    expect(AUDIT_SOURCES.map(sourceLabel)).toEqual(Object.values(AuditSource).map((source) => ({ http: 'REST API', agent: 'Agent' } as Partial<Record<string, string>>)[source] ?? source.toUpperCase()));
    expect(sourceLabel('mcp')).toBe('MCP');
  });

  it('names the file by the school and the range', () => {
    expect(exportFileName('Greenhill School', '2026-12-01', '2026-12-06')).toBe('activity-greenhill-school-2026-12-01-to-2026-12-06.csv');
    expect(exportFileName('École Saint-Luc / Nord', '2026-01-01', '2026-01-31')).toBe('activity-ecole-saint-luc-nord-2026-01-01-to-2026-01-31.csv');
    expect(exportFileName(null, '2026-01-01', '2026-01-01')).toBe('activity-school-2026-01-01-to-2026-01-01.csv');
  });
});
