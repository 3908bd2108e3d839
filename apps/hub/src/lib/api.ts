import type { AuditLogDetail, AuditLogRow, CallerProfile, CampusSummary, ConnectedApp, ConnectedAppCreated, LoginResponse, SchoolSummary } from '@naalya/access';
import type {
  AgentMap,
  AgentRunModeName,
  CancelRunResponse,
  MultitaskStrategy,
  ResumeResponse,
  StartRunResponse,
  ThreadDetail,
  ThreadSummary,
} from '@naalya/agent-tools';
import { TARGET_SCHOOL_HEADER, actingSchool } from './acting-school';
import { session } from './session';
import { httpErrorOf } from './sse';

/** `everySchool`: sent without the picked school, for the one read that must see them all (the list to pick from). */
type ApiRequestInit = { method?: string; body?: unknown; token?: string | null; everySchool?: true };

/**
 * Same origin in production (the server serves the Hub) and in development (Vite proxies these paths). A platform
 * administrator's picked school rides on every request, so what they read and write is that school's.
 */
export const request = async <T>(path: string, init: ApiRequestInit = {}): Promise<T> => (await requestWithHeaders<T>(path, init)).body;

/** The bearer token and, for a platform administrator, the picked school: what every REST request carries. */
const authHeaders = (token: string | null, everySchool?: true): Record<string, string> => {
  const school = everySchool || !token ? null : actingSchool.get();
  return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(school ? { [TARGET_SCHOOL_HEADER]: school.id } : {}) };
};

/** As request, with the response's headers (a list's next-page cursor rides in x-next-cursor). */
export const requestWithHeaders = async <T>(path: string, init: ApiRequestInit = {}): Promise<{ body: T; headers: Headers }> => {
  const token = init.token === undefined ? session.get() : init.token;
  const response = await fetch(path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: {
      accept: 'application/json',
      ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...authHeaders(token, init.everySchool),
    },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  if (!response.ok) throw await httpErrorOf(response);
  // 204 (a delete) has no body.
  return { body: (response.status === 204 ? undefined : await response.json()) as T, headers: response.headers };
};

export const api = {
  login: (email: string, password: string) =>
    request<LoginResponse>('/auth/login', { body: { email, password }, token: null }),
  /** Who the caller is, read fresh by the server (display only). */
  me: () => request<CallerProfile>('/auth/me'),
  campuses: () => request<CampusSummary[]>('/campuses'),
  /** The caller's live connected apps (tokens for the MCP door); never the tokens themselves. */
  connectedApps: () => request<ConnectedApp[]>('/mcp-tokens'),
  /** A new connected app: its token is in this answer only. */
  createConnectedApp: (body: { name: string; expiresInDays: number; campusId?: string }) => request<ConnectedAppCreated>('/mcp-tokens', { body }),
  revokeConnectedApp: (id: string) => request<void>(`/mcp-tokens/${encodeURIComponent(id)}`, { method: 'DELETE' }),
  /** The schools a platform administrator may act in (refused to anyone else): read across them all, so unpicked. */
  schools: () => request<SchoolSummary[]>('/schools', { everySchool: true }),
  map: (mode: AgentRunModeName) => request<AgentMap>(`/agent/map?mode=${mode}`),
  /** One page of the caller's threads, newest first; `next` is the following page's cursor, null on the last page. */
  threads: async (options: { q?: string; cursor?: string; limit?: number } = {}) => {
    const query = new URLSearchParams();
    if (options.q) query.set('q', options.q);
    if (options.cursor) query.set('cursor', options.cursor);
    if (options.limit) query.set('limit', String(options.limit));
    const { body, headers } = await requestWithHeaders<ThreadSummary[]>(`/agent/threads${query.size ? `?${query}` : ''}`);
    return { threads: body, next: headers.get('x-next-cursor') };
  },
  renameThread: (threadId: string, title: string) =>
    request<ThreadSummary>(`/agent/threads/${encodeURIComponent(threadId)}`, { method: 'PATCH', body: { title } }),
  /** Deletes a thread with its runs and events; its audit rows stay. 409 while one of its runs is in progress. */
  deleteThread: (threadId: string) => request<void>(`/agent/threads/${encodeURIComponent(threadId)}`, { method: 'DELETE' }),
  createThread: () => request<ThreadSummary>('/agent/threads', { body: {} }),
  thread: (threadId: string) => request<ThreadDetail>(`/agent/threads/${encodeURIComponent(threadId)}`),
  /**
   * `reject` (the server's default, left out) answers 409 while another run is active; `enqueue` queues, `interrupt`
   * stops it first. A platform administrator's run acts in the picked school (the server refuses it from anyone else).
   */
  startRun: (threadId: string, message: string, campusId?: string, multitaskStrategy: MultitaskStrategy = 'reject') => {
    const targetSchoolId = actingSchool.get()?.id;
    return request<StartRunResponse>(`/agent/threads/${encodeURIComponent(threadId)}/runs`, {
      body: {
        message,
        ...(campusId ? { campusId } : {}),
        ...(targetSchoolId ? { targetSchoolId } : {}),
        ...(multitaskStrategy === 'reject' ? {} : { multitaskStrategy }),
      },
    });
  },
  /** Stops a run (idempotent): its writes already committed stay, and are listed. */
  cancelRun: (threadId: string, runId: string) =>
    request<CancelRunResponse>(`/agent/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/cancel`, { method: 'POST', body: {} }),
  /**
   * `edits`: the arguments of a confirmation the person changed before approving (null unsets one): the server checks
   * them with the tool's schema (400 naming the argument) and asks about the edited call again.
   */
  resume: (threadId: string, interruptId: string, answer: string, edits?: Record<string, string | null>) =>
    request<ResumeResponse>(`/agent/threads/${encodeURIComponent(threadId)}/resume`, {
      body: { interruptId, answer, ...(edits ? { edits } : {}) },
    }),
  eventsUrl: (threadId: string, runId: string) => `/agent/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/events`,
  auditLog: (query: { callId?: string; limit?: number } = {}) => {
    const params = new URLSearchParams();
    if (query.callId) params.set('callId', query.callId);
    if (query.limit) params.set('limit', String(query.limit));
    const suffix = params.toString();
    return request<AuditLogRow[]>(`/audit-log${suffix ? `?${suffix}` : ''}`);
  },
  /** One page of the activity log matching `filters` (as filtersToApiQuery gives them); `next` is null on the last page. */
  auditPage: async (filters: URLSearchParams, options: { cursor?: string | null; limit: number }) => {
    const query = new URLSearchParams(filters);
    if (options.cursor) query.set('cursor', options.cursor);
    query.set('limit', String(options.limit));
    const { body, headers } = await requestWithHeaders<AuditLogRow[]>(`/audit-log?${query}`);
    return { rows: body, next: headers.get('x-next-cursor') };
  },
  auditRow: (id: string) => request<AuditLogDetail>(`/audit-log/${encodeURIComponent(id)}`),
  /** The CSV of a range (from and to are required by the API), fetched with the session's token. */
  auditExport: async (filters: URLSearchParams): Promise<Blob> => {
    const response = await fetch(`/audit-log/export.csv?${filters}`, { headers: { accept: 'text/csv', ...authHeaders(session.get()) } });
    if (!response.ok) throw await httpErrorOf(response);
    return response.blob();
  },
  /** The school's staff the caller may see, by name: who the Activity page can be filtered by. */
  staff: () => request<StaffMember[]>('/staff'),
};

/** One row of GET /staff. */
export type StaffMember = { id: string; fullName: string; email: string; campusName: string | null; isActive: boolean };

/**
 * The idempotency key the worker gives a tool call (sha256 of "threadId:toolCallId", stable across replays), which
 * the server stores as the audit row's call id: how the Hub checks whether a write with an unknown outcome happened.
 */
export const toolCallKey = async (threadId: string, toolCallId: string): Promise<string> => {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`${threadId}:${toolCallId}`));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
};
