import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDepartmentFixture } from '../../naalya-ai/tools/fixtures/create-department.fixture.js';
import { callRest } from '../../../testing/rest-client.js';
import { createTestApp, type TestApp } from '../../../testing/test-app.js';
import { AuditLogService } from '../audit/audit-log.service.js';
import { DEMO_PASSWORD } from '../../seed/demo-seed.js';

let testApp: TestApp;

beforeAll(async () => {
  testApp = await createTestApp();
});
afterAll(() => testApp?.close());

const login = async (email: string, password: string) => {
  const response = await fetch(`${await testApp.app.getUrl()}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('login', () => {
  it('signs a token for a correct password, checked against a salted hash', async () => {
    const { status, body } = await login('admin@greenhill.school', DEMO_PASSWORD);
    expect(status).toBe(200);
    expect(body['accessToken']).toEqual(expect.any(String));
    const [{ password_hash: hash }] = await testApp.owner.query(`SELECT password_hash FROM users WHERE email = 'admin@greenhill.school'`);
    expect(hash).toMatch(/^scrypt\$/);
    expect(hash).not.toContain(DEMO_PASSWORD);
  });

  it('gives the same refusal for a wrong password, an unknown email and a deactivated user', async () => {
    const answers = await Promise.all([
      login('admin@greenhill.school', 'wrong-password'),
      login('nobody@greenhill.school', DEMO_PASSWORD),
      login('former@greenhill.school', DEMO_PASSWORD),
    ]);
    for (const answer of answers) expect(answer).toEqual({ status: 401, body: expect.objectContaining({ message: 'Email or password is incorrect.' }) });
  });

  it("an error body is Nest's own with the code beside it, nothing else", async () => {
    expect(await login('admin@greenhill.school', 'wrong-password')).toEqual({
      status: 401,
      body: { statusCode: 401, message: 'Email or password is incorrect.', error: 'Unauthorized', code: 'UNAUTHENTICATED' },
    });
  });

  it('refuses a route without a token, and a token signed with another secret', async () => {
    const url = `${await testApp.app.getUrl()}/departments`;
    expect((await fetch(url)).status).toBe(401);
    const forged = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    expect((await fetch(url, { headers: { authorization: `Bearer ${forged}` } })).status).toBe(401);
  });
});

describe('REST audit', () => {
  it('a REST write writes exactly one audit row, marked as coming from HTTP', async () => {
    const call = await createDepartmentFixture.allowed({ demo: testApp.demo, owner: testApp.owner });
    const rest = await callRest(testApp, call.persona, createDepartmentFixture.rest, call.args);
    expect(rest.status).toBe(201);
    const id = (rest.body as { id: string }).id;
    const rows = await testApp.owner.query(`SELECT school_id, actor_id, action, source FROM audit_log WHERE resource_id = $1`, [id]);
    expect(rows).toEqual([{ school_id: call.persona.schoolId, actor_id: call.persona.id, action: 'create', source: 'http' }]);
  });

  it('a REST write whose audit insert fails leaves no effect', async () => {
    const spy = vi.spyOn(testApp.module.get(AuditLogService), 'record').mockRejectedValue(new Error('audit down'));
    try {
      const call = await createDepartmentFixture.allowed({ demo: testApp.demo, owner: testApp.owner });
      const rest = await callRest(testApp, call.persona, createDepartmentFixture.rest, call.args);
      expect(rest.status).toBe(500);
      const [{ count }] = await testApp.owner.query(`SELECT count(*)::int AS count FROM departments WHERE name = $1`, [call.args['name']]);
      expect(count).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });
});
