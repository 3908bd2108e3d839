import type { ConnectedApp, ConnectedAppCreated } from '@naalya/access';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { claimsFor, tokenFor } from '../../../testing/rest-client.js';
import type { DemoPersona } from '../../seed/demo-seed.js';
import { McpTokensService, mcpTokenHash } from './mcp-tokens.service.js';

const TOKENS_PER_USER = 3;
const AUDIENCE = 'http://127.0.0.1:3000/mcp';

let testApp: TestApp;
let tokens: McpTokensService;
let school: TestApp['demo']['schools'][0];
let otherSchool: TestApp['demo']['schools'][1];

beforeAll(async () => {
  testApp = await createTestApp({ MCP_TOKENS_PER_USER: TOKENS_PER_USER, MCP_RESOURCE_URL: AUDIENCE });
  tokens = testApp.module.get(McpTokensService);
  [school, otherSchool] = testApp.demo.schools;
});
afterAll(async () => {
  await testApp?.close();
});

const request = async (bearer: string, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) => {
  const response = await fetch(`${await testApp.app.getUrl()}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
};

const asPersona = (persona: DemoPersona, method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) =>
  request(tokenFor(testApp, persona), method, path, body);

const createApp = async (persona: DemoPersona, body: Record<string, unknown> = {}): Promise<ConnectedAppCreated> => {
  const response = await asPersona(persona, 'POST', '/mcp-tokens', { name: 'Desk assistant', expiresInDays: 30, ...body });
  expect(response.status).toBe(201);
  return response.body as ConnectedAppCreated;
};

const revokeEverything = async (persona: DemoPersona) => {
  for (const app of (await asPersona(persona, 'GET', '/mcp-tokens')).body as ConnectedApp[]) {
    await asPersona(persona, 'DELETE', `/mcp-tokens/${app.id}`);
  }
};

describe('connected apps: tokens for the MCP door', () => {
  it('issues a token for the door URL once and stores only its sha256', async () => {
    const created = await createApp(school.personas.schoolAdmin);
    expect(created.token).toMatch(/^nmcp_[A-Za-z0-9_-]{43}$/);
    expect(created.audience).toBe(AUDIENCE);
    expect(created.campusId).toBeNull();
    expect(Date.parse(created.expiresAt) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const [row] = (await testApp.owner.query(`SELECT row_to_json(t)::text AS json, token_hash FROM mcp_tokens t WHERE id = $1`, [created.id])) as {
      json: string;
      token_hash: string;
    }[];
    expect(row.token_hash).toBe(mcpTokenHash(created.token));
    expect(row.json).not.toContain(created.token);
    const listed = (await asPersona(school.personas.schoolAdmin, 'GET', '/mcp-tokens')).body as ConnectedApp[];
    expect(listed.map((app) => app.id)).toContain(created.id);
    expect(JSON.stringify(listed)).not.toContain(created.token);
  });

  it('lists and revokes only the caller\'s own connected apps, never a colleague\'s or another school\'s', async () => {
    const mine = await createApp(school.personas.teacher);
    const colleague = school.personas.departmentHead;
    expect(((await asPersona(colleague, 'GET', '/mcp-tokens')).body as ConnectedApp[]).map((app) => app.id)).not.toContain(mine.id);
    expect((await asPersona(colleague, 'DELETE', `/mcp-tokens/${mine.id}`)).status).toBe(404);
    expect((await asPersona(otherSchool.personas.schoolAdmin, 'DELETE', `/mcp-tokens/${mine.id}`)).status).toBe(404);
    expect('holder' in (await tokens.authenticate(mine.token, AUDIENCE))).toBe(true);
  });

  it('a revoked token is refused by the door and gone from the list; revoking again is harmless', async () => {
    const created = await createApp(school.personas.subjectTeacher);
    expect((await asPersona(school.personas.subjectTeacher, 'DELETE', `/mcp-tokens/${created.id}`)).status).toBe(204);
    expect((await asPersona(school.personas.subjectTeacher, 'DELETE', `/mcp-tokens/${created.id}`)).status).toBe(204);
    expect(await tokens.authenticate(created.token, AUDIENCE)).toEqual({ refused: 'revoked' });
    expect(((await asPersona(school.personas.subjectTeacher, 'GET', '/mcp-tokens')).body as ConnectedApp[]).map((app) => app.id)).not.toContain(created.id);
  });

  it('the REST API refuses an MCP token', async () => {
    const created = await createApp(school.personas.classTeacher);
    expect((await request(created.token, 'GET', '/auth/me')).status).toBe(401);
    expect((await request(created.token, 'GET', '/departments')).status).toBe(401);
    expect((await request(created.token, 'GET', '/mcp-tokens')).status).toBe(401);
    // The negative case: the same person's login token is accepted there.
    expect((await asPersona(school.personas.classTeacher, 'GET', '/auth/me')).status).toBe(200);
  });

  it('the door refuses a login token', async () => {
    const login = tokenFor(testApp, school.personas.classTeacher);
    expect(await tokens.authenticate(login, AUDIENCE)).toEqual({ refused: 'malformed' });
    // Even dressed with the door's prefix, a login token has no row.
    expect(await tokens.authenticate(`nmcp_${login}`.slice(0, 200), AUDIENCE)).toEqual({ refused: 'unknown' });
  });

  it('the door refuses a token issued for another audience', async () => {
    const created = await tokens.create({ name: 'Elsewhere', expiresInDays: 1 }, claimsFor(school.personas.classTeacher), 'https://other.example/mcp');
    expect(await tokens.authenticate(created.token, AUDIENCE)).toEqual({ refused: 'wrong-audience' });
    expect('holder' in (await tokens.authenticate(created.token, 'https://other.example/mcp'))).toBe(true);
  });

  it('the door refuses an expired token', async () => {
    const created = await createApp(school.personas.registrar);
    await testApp.owner.query(`UPDATE mcp_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`, [created.id]);
    expect(await tokens.authenticate(created.token, AUDIENCE)).toEqual({ refused: 'expired' });
  });

  it('identity, school and campus mode come from the token\'s row, never from the client', async () => {
    const campus = school.campuses[0];
    const created = await createApp(school.personas.campusAdmin, { campusId: campus.id });
    expect(created.campusId).toBe(campus.id);
    const result = await tokens.authenticate(created.token, AUDIENCE);
    if (!('holder' in result)) throw new Error(`refused: ${result.refused}`);
    expect(result.holder.caller).toMatchObject({ sub: school.personas.campusAdmin.id, schoolId: school.id, campusId: school.personas.campusAdmin.campusId });
    expect(result.holder.campusId).toBe(campus.id);
  });

  it('refuses a campus mode outside a campus-limited person\'s own campus, and another school\'s campus', async () => {
    const admin = school.personas.campusAdmin;
    const otherCampus = school.campuses.find((campus) => campus.id !== admin.campusId)!;
    expect((await asPersona(admin, 'POST', '/mcp-tokens', { name: 'x', expiresInDays: 1, campusId: otherCampus.id })).status).toBe(403);
    expect((await asPersona(school.personas.schoolAdmin, 'POST', '/mcp-tokens', { name: 'x', expiresInDays: 1, campusId: otherSchool.campuses[0].id })).status).toBe(404);
  });

  it('refuses a platform administrator: a connected app is pinned to a school', async () => {
    expect((await asPersona(testApp.demo.platformAdmin, 'POST', '/mcp-tokens', { name: 'x', expiresInDays: 1 })).status).toBe(403);
  });

  it('refuses bad input with the field named: no name, an expiry beyond the limit, unknown fields', async () => {
    const persona = school.personas.bothHats;
    for (const body of [{ expiresInDays: 1 }, { name: 'x', expiresInDays: 91 }, { name: 'x', expiresInDays: 0 }, { name: 'x', expiresInDays: 1, audience: 'https://evil.example' }]) {
      const response = await asPersona(persona, 'POST', '/mcp-tokens', body);
      expect(response.status).toBe(400);
    }
  });

  it('bounds the live tokens per person (MCP_TOKENS_PER_USER); revoking one frees a place', async () => {
    const persona = school.personas.directorOfStudies;
    await revokeEverything(persona);
    const created = [];
    for (let index = 0; index < TOKENS_PER_USER; index += 1) created.push(await createApp(persona));
    const refused = await asPersona(persona, 'POST', '/mcp-tokens', { name: 'one too many', expiresInDays: 1 });
    expect(refused).toMatchObject({ status: 429, body: { code: 'MCP_TOKEN_LIMIT' } });
    await asPersona(persona, 'DELETE', `/mcp-tokens/${created[0].id}`);
    await createApp(persona);
  });
});
